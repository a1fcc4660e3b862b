//! Where everything lives: the key layout, with the hash tags that put each queue in one slot.
//!
//! Every key starts with a hash tag, `{<prefix>:<area>}`, so Redis Cluster files it by the tag
//! alone: each queue's keys share `{<prefix>:q:<queue>}` (one slot per queue, so each script
//! on a queue touches one slot, and queues spread over the masters), and each store beside the
//! queues has a tag of its own. Names a user chose (queues) are escaped inside the tag
//! ([`escape`]): a `{` or `}` in them cannot end the tag early and move a queue's keys to
//! another slot. Job names, tenants and keys only ever follow the tag, where braces mean
//! nothing.

use crate::driver::records::JobId;

/// The slots of the job-id index (the queue a job id lives in), spread by the id's last byte.
pub(super) const ID_INDEX_SHARDS: u8 = 16;

/// The key layout of one store (one prefix).
#[derive(Debug, Clone)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    /// The layout under `prefix` (checked by the URL reader: no braces).
    pub(super) fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    /// The prefix every key starts with, inside the tag.
    #[allow(dead_code)] // no port reads it yet; kept for the sub-ports still to come
    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The tag every key of `queue` starts with; the queue scripts build the rest
    /// (`<tag>:j:<id>`, `<tag>:due:<lane>` (a tenant and priority), ...; `lua/lib.lua` names them all).
    pub(super) fn queue(&self, queue: &str) -> String {
        format!("{{{}:q:{}}}", self.prefix, escape(queue))
    }

    /// The set of every queue ever enqueued to (the operator surface walks it).
    pub(super) fn queues(&self) -> String {
        format!("{{{}:g}}:queues", self.prefix)
    }

    /// The shard of the job-id index that holds `id`: a hash of id -> queue.
    pub(super) fn id_index(&self, id: &JobId) -> String {
        let shard = id.as_bytes()[15] % ID_INDEX_SHARDS;
        format!("{{{}:ix:{shard}}}:ids", self.prefix)
    }

    /// What every shard's key starts with, `{<prefix>:ix:`: the enqueue script names a shard
    /// itself, as the head, the shard's number and `}:ids`. The shard is the id's last byte
    /// modulo 16, which is the value of the id's last hex digit.
    pub(super) fn id_index_head(&self) -> String {
        format!("{{{}:ix:", self.prefix)
    }

    /// Every shard of the job-id index.
    #[allow(dead_code)] // no port walks the index yet; kept for the sub-ports still to come
    pub(super) fn id_index_shards(&self) -> impl Iterator<Item = String> + '_ {
        (0..ID_INDEX_SHARDS).map(|shard| format!("{{{}:ix:{shard}}}:ids", self.prefix))
    }

    /// The channel an enqueue announces due jobs on (its message: the queue), for the push
    /// wake. Plain Pub/Sub reaches every node of a cluster.
    pub(super) fn wake_channel(&self) -> String {
        format!("{}:wake", self.prefix)
    }

    /// The events' slot: the bus, its marks and the parked runs' waits.
    pub(super) fn events(&self) -> String {
        format!("{{{}:ev}}", self.prefix)
    }

    /// The slot of a store beside the queues (`lease`, `sched`, `backfill`, `book`, `hooks`,
    /// `ops`): each is one tag, its keys `<tag>:<name>`.
    pub(super) fn area(&self, area: &str) -> String {
        format!("{{{}:{area}}}", self.prefix)
    }

    /// The slot of one name in a store beside the queues (a ledger of the book), so names
    /// spread over a cluster's masters: `{<prefix>:<area>:<name>}`, the name escaped.
    pub(super) fn area_of(&self, area: &str, name: &str) -> String {
        format!("{{{}:{area}:{}}}", self.prefix, escape(name))
    }
}

/// A user's name made safe inside a hash tag: `%` `{` `}` become `%25` `%7B` `%7D`, so the tag
/// ends where the layout says and two names never share an escaped form.
pub(super) fn escape(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains(['%', '{', '}']) {
        return name.into();
    }
    let mut out = String::with_capacity(name.len() + 6);
    for c in name.chars() {
        match c {
            '%' => out.push_str("%25"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    out.into()
}

/// The slot Redis Cluster files `key` in (CRC16 of its hash tag, mod 16384), for tests and for
/// the guide's claim that a queue's keys share one slot.
pub fn key_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = bytes.iter().position(|b| *b == b'{').and_then(|open| {
        let close = bytes[open + 1..].iter().position(|b| *b == b'}')?;
        (close > 0).then(|| &bytes[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(bytes)) % 16384
}

/// CRC16/XMODEM, the checksum Redis Cluster's slots are defined by.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for byte in bytes {
        crc ^= u16::from(*byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_is_redis_clusters() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(key_slot("123456789"), 12739);
        assert_eq!(key_slot("foo"), 12182);
        assert_eq!(key_slot("{user1000}.following"), key_slot("user1000"));
        assert_eq!(
            key_slot("foo{}{bar}"),
            key_slot("foo{}{bar}"),
            "an empty tag is no tag"
        );
    }

    #[test]
    fn a_brace_in_a_queue_name_cannot_move_its_keys() {
        let keys = Keys::new("jobs");
        let plain = keys.queue("orders");
        assert_eq!(plain, "{jobs:q:orders}");
        for hostile in ["a}b", "{x}", "a{b", "%7D", "}"] {
            let tag = keys.queue(hostile);
            assert_eq!(tag.matches('{').count(), 1, "{tag}");
            assert_eq!(tag.matches('}').count(), 1, "{tag}");
            assert!(tag.ends_with('}'), "{tag}");
            let job = format!("{tag}:j:0190a0b0-0000-7000-8000-000000000001");
            assert_eq!(key_slot(&job), key_slot(&tag), "{hostile}");
        }
        assert_ne!(keys.queue("%7D"), keys.queue("}"), "escaping is one to one");
    }

    #[test]
    fn the_enqueue_script_names_an_ids_shard_as_the_driver_does() {
        // `lua/enqueue.lua`: head, the value of the id's last hex digit, `}:ids`.
        let keys = Keys::new("jobs");
        for _ in 0..64 {
            let id = uuid::Uuid::now_v7();
            let text = id.to_string();
            let digit = u8::from_str_radix(&text[text.len() - 1..], 16).unwrap();
            let scripted = format!("{}{digit}}}:ids", keys.id_index_head());
            assert_eq!(scripted, keys.id_index(&id), "{text}");
        }
    }
}
