//! W3C Trace Context: the `traceparent` a job carries from its enqueue to every run.
//!
//! `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`, lowercase. An all-zero trace or span
//! id, a version of `ff`, or anything malformed does not parse.

use std::fmt;

/// One span's place in a trace: what a `traceparent` header carries.
///
/// ```
/// use jobs::telemetry::TraceContext;
///
/// let parent = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
/// let child = parent.child();
/// assert_eq!(child.trace_id(), parent.trace_id());
/// assert_ne!(child.span_id(), parent.span_id());
/// assert!(child.to_string().starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceContext {
    trace_id: u128,
    span_id: u64,
    flags: u8,
}

/// The `sampled` trace flag.
const SAMPLED: u8 = 0x01;

impl TraceContext {
    /// A new trace: a random trace id and span id, sampled.
    pub fn new_root() -> Self {
        TraceContext {
            trace_id: nonzero_u128(),
            span_id: nonzero_u64(),
            flags: SAMPLED,
        }
    }

    /// A new span in the same trace, with the same flags.
    pub fn child(&self) -> Self {
        TraceContext {
            trace_id: self.trace_id,
            span_id: nonzero_u64(),
            flags: self.flags,
        }
    }

    /// Reads a `traceparent` value. `None` when it is not a valid version-00 header (a future
    /// version's longer value is read by its first four fields, as the spec asks).
    pub fn parse(text: &str) -> Option<Self> {
        // Every field has a fixed width: `vv-<32 hex>-<16 hex>-<2 hex>`, then, for a later
        // version only, `-` and fields of its own.
        let b = text.trim().as_bytes();
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = lower_hex(&b[..2])?;
        // `ff` is forbidden; version 00 has exactly four fields.
        if version == 0xff || (b.len() > 55 && (version == 0 || b[55] != b'-')) {
            return None;
        }
        let trace_id = u128::from(lower_hex(&b[3..19])?) << 64 | u128::from(lower_hex(&b[19..35])?);
        let span_id = lower_hex(&b[36..52])?;
        let flags = u8::try_from(lower_hex(&b[53..55])?).ok()?;
        (trace_id != 0 && span_id != 0).then_some(TraceContext {
            trace_id,
            span_id,
            flags,
        })
    }

    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        format!("{:032x}", self.trace_id)
    }

    /// The span id, 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        format!("{:016x}", self.span_id)
    }

    /// [`TraceContext::trace_id`] written only when displayed: a span's field costs nothing
    /// when no subscriber reads it (tracing's `log` fallback evaluates every field
    /// expression).
    pub(crate) fn trace_hex(&self) -> impl fmt::Display {
        Hex32(self.trace_id)
    }

    /// [`TraceContext::span_id`], written only when displayed.
    pub(crate) fn span_hex(&self) -> impl fmt::Display {
        Hex16(self.span_id)
    }

    /// Whether the `sampled` flag is set.
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The ambient context inside a job's run or step (or an enqueue's producer span): what
    /// an outgoing call from a job body should propagate. `None` outside of one.
    pub fn current() -> Option<Self> {
        super::current()
    }
}

struct Hex32(u128);

impl fmt::Display for Hex32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

struct Hex16(u64);

impl fmt::Display for Hex16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The `traceparent` value.
impl TraceContext {
    /// The `traceparent` value, `00-<trace id>-<span id>-<flags>`: written digit by digit into
    /// its 55 bytes (every enqueue stamps one; through `format!` it cost more than the rest of
    /// the stamp together).
    fn header(&self) -> [u8; 55] {
        let mut out = [b'-'; 55];
        out[..2].copy_from_slice(b"00");
        write_hex(&mut out[3..35], self.trace_id);
        write_hex(&mut out[36..52], u128::from(self.span_id));
        write_hex(&mut out[53..55], u128::from(self.flags));
        out
    }

    /// The `traceparent` value as a `String` of its exact length (as `to_string`, without the
    /// formatter's growth).
    pub(crate) fn to_traceparent(self) -> String {
        // Only ASCII hex digits and dashes were written.
        std::str::from_utf8(&self.header())
            .map(str::to_owned)
            .unwrap_or_default()
    }
}

/// Writes the low `digits.len()` hex digits of `value` into `digits`, lowercase.
fn write_hex(digits: &mut [u8], value: u128) {
    for (place, digit) in digits.iter_mut().rev().enumerate() {
        *digit = b"0123456789abcdef"[(value >> (4 * place)) as usize & 0xf];
    }
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.header();
        // Only ASCII hex digits and dashes were written.
        f.write_str(std::str::from_utf8(&header).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceContext({self})")
    }
}

/// The value of up to 16 lowercase hex digits; `None` on any other byte. Read through a table
/// into a u64 (every run parses its job's traceparent: a trace id is read as two halves).
fn lower_hex(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |n, &d| {
        let v = HEX_DIGIT[usize::from(d)];
        (v != NOT_HEX).then_some(n << 4 | u64::from(v))
    })
}

/// A lowercase hex digit's value, or [`NOT_HEX`], for each byte.
static HEX_DIGIT: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut d = 0;
    while d < 10 {
        table[b'0' as usize + d] = d as u8;
        d += 1;
    }
    let mut d = 0;
    while d < 6 {
        table[b'a' as usize + d] = 10 + d as u8;
        d += 1;
    }
    table
};

const NOT_HEX: u8 = 0xff;

fn nonzero_u128() -> u128 {
    loop {
        let id: u128 = crate::entropy::with_rng(|rng| rand::Rng::random(rng));
        if id != 0 {
            return id;
        }
    }
}

fn nonzero_u64() -> u64 {
    loop {
        let id: u64 = crate::entropy::with_rng(|rng| rand::Rng::random(rng));
        if id != 0 {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn round_trips_the_spec_example() {
        let parsed = TraceContext::parse(SAMPLE).unwrap();
        assert_eq!(parsed.to_string(), SAMPLE);
        assert_eq!(parsed.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parsed.span_id(), "00f067aa0ba902b7");
        assert!(parsed.sampled());
    }

    #[test]
    fn writes_every_digit_with_its_leading_zeros() {
        let small = TraceContext {
            trace_id: 1,
            span_id: 0xa,
            flags: 0,
        };
        assert_eq!(
            small.to_traceparent(),
            "00-00000000000000000000000000000001-000000000000000a-00"
        );
        for _ in 0..100 {
            let c = TraceContext::new_root().child();
            let formatted = format!("00-{:032x}-{:016x}-{:02x}", c.trace_id, c.span_id, c.flags);
            assert_eq!(c.to_traceparent(), formatted);
            assert_eq!(c.to_string(), formatted);
            assert_eq!(TraceContext::parse(&formatted), Some(c));
        }
    }

    #[test]
    fn refuses_malformed_values() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_future_version_is_read_by_its_first_fields() {
        let parsed =
            TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later")
                .unwrap();
        assert_eq!(parsed.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    }

    #[test]
    fn roots_are_formatted_and_children_share_the_trace() {
        let root = TraceContext::new_root();
        let text = root.to_string();
        assert_eq!(text.len(), 55);
        assert_eq!(TraceContext::parse(&text), Some(root));
        let child = root.child();
        assert_eq!(child.trace_id(), root.trace_id());
        assert_ne!(child.span_id(), root.span_id());
    }
}
