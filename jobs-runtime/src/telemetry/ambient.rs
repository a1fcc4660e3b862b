//! The ambient trace context of the run, step or send being polled, and when a run's is made.
//!
//! A run's context is a child of the `traceparent` its enqueue stored: the stored value parsed,
//! and a fresh span id drawn. Most attempts never read it (no subscriber listens, the body
//! enqueues nothing), so a run's context is made the first time something reads it: its span's
//! fields, [`TraceContext::current`] in the body, an enqueue or a step inside it. What is read
//! is the same on every read; a context nobody reads is never made, which nobody can tell.

use std::cell::OnceCell;
use std::fmt;
use std::sync::Arc;

use super::TraceContext;

/// A context, made now or on first read.
pub(crate) struct Ambient {
    /// The stored `traceparent` a run's context descends from (`None` for one made already).
    stored: Option<Arc<str>>,
    made: OnceCell<TraceContext>,
}

impl Ambient {
    /// A context already made (an enqueue's producer span, a step).
    pub(crate) fn made(context: TraceContext) -> Self {
        Ambient {
            stored: None,
            made: OnceCell::from(context),
        }
    }

    /// A run's context: a child of `stored` when it parses, else a new root; made on first read.
    pub(crate) fn child_of(stored: Option<Arc<str>>) -> Self {
        Ambient {
            stored,
            made: OnceCell::new(),
        }
    }

    /// The context, made now if nothing read it before.
    pub(crate) fn get(&self) -> TraceContext {
        *self.made.get_or_init(|| {
            self.parent()
                .map_or_else(TraceContext::new_root, |p| p.child())
        })
    }

    /// The stored parent, when there is a valid one.
    pub(crate) fn parent(&self) -> Option<TraceContext> {
        self.stored.as_deref().and_then(TraceContext::parse)
    }

    /// The trace id, for a span field: the context is made only if the field is written.
    pub(crate) fn trace_hex(&self) -> impl fmt::Display + '_ {
        Lazily(self, |c, f| fmt::Display::fmt(&c.trace_hex(), f))
    }

    /// The span id, for a span field, made as [`Ambient::trace_hex`].
    pub(crate) fn span_hex(&self) -> impl fmt::Display + '_ {
        Lazily(self, |c, f| fmt::Display::fmt(&c.span_hex(), f))
    }
}

/// Writes a part of an ambient context, making it first.
struct Lazily<'a>(
    &'a Ambient,
    fn(&TraceContext, &mut fmt::Formatter<'_>) -> fmt::Result,
);

impl fmt::Display for Lazily<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.1)(&self.0.get(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_run_context_is_one_child_of_the_stored_parent_however_often_read() {
        let ambient = Ambient::child_of(Some(Arc::from(STORED)));
        assert!(ambient.made.get().is_none(), "nothing read it yet");
        let first = ambient.get();
        assert_eq!(first.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_ne!(first.span_id(), "00f067aa0ba902b7");
        assert_eq!(ambient.get(), first);
        assert_eq!(ambient.span_hex().to_string(), first.span_id());
        assert_eq!(ambient.trace_hex().to_string(), first.trace_id());
    }

    #[test]
    fn writing_a_field_makes_the_context_that_later_reads_see() {
        let ambient = Ambient::child_of(Some(Arc::from(STORED)));
        let written = ambient.span_hex().to_string();
        assert_eq!(ambient.get().span_id(), written);
    }

    #[test]
    fn an_invalid_or_missing_parent_makes_a_new_root() {
        for stored in [None, Some(Arc::from("00-not-a-traceparent"))] {
            let ambient = Ambient::child_of(stored);
            assert!(ambient.parent().is_none());
            assert_ne!(ambient.get().trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        }
    }
}
