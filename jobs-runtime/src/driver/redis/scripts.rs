//! The Lua scripts, each one atomic on the server and each touching one hash slot (the
//! queue's, or the store's beside the queues): the queue scripts start with `lua/lib.lua`,
//! the one definition of a queue's keys and of how a job changes state.

use std::sync::LazyLock;

use redis::Script;

macro_rules! queue_script {
    ($name:ident, $file:literal) => {
        pub(super) static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(concat!(
                include_str!("lua/lib.lua"),
                "\n",
                include_str!(concat!("lua/", $file))
            ))
        });
    };
}

macro_rules! plain_script {
    ($name:ident, $file:literal) => {
        pub(super) static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("lua/", $file))));
    };
}

queue_script!(ENQUEUE, "enqueue.lua");
queue_script!(CLAIM, "claim.lua");
queue_script!(SETTLE, "settle.lua");
queue_script!(JOB, "job.lua");
queue_script!(DEPENDENCIES, "dependencies.lua");
queue_script!(GROUPS, "groups.lua");
queue_script!(STATS, "stats.lua");
queue_script!(NEXT_DUE, "next_due.lua");
queue_script!(PURGE, "purge.lua");
plain_script!(EVENTS, "events.lua");
plain_script!(LEASE, "lease.lua");
plain_script!(SCHEDULER, "scheduler.lua");
plain_script!(BACKFILL, "backfill.lua");
plain_script!(BOOK, "ledger_book.lua");
plain_script!(WEBHOOK_LEDGER, "webhook_ledger.lua");
queue_script!(INTROSPECT_LIST, "introspect_list.lua");
queue_script!(INTROSPECT_VERBS, "introspect_verbs.lua");
queue_script!(INTROSPECT_BULK, "introspect_bulk.lua");
queue_script!(INTROSPECT_PAUSE, "introspect_pause.lua");
queue_script!(INTROSPECT_COUNTERS, "introspect_counters.lua");
plain_script!(INTROSPECT_WORKERS, "introspect_workers.lua");

/// A queue script's invocation on `queue`. `KEYS[1]` is the queue's tag, which the script builds
/// every key from; `KEYS[2]` is a second name in the same slot that is never stored. Declaring
/// two keys, neither of which exists, makes a cluster node whose slot is being migrated answer
/// `TRYAGAIN` (retryable) instead of running the script on one side of a half-moved queue: a
/// script reaches keys it did not declare (jobs by id), which Redis cannot route during a
/// migration. Outside a migration the two names only route the script to the queue's master.
pub(super) fn on_queue<'a>(
    script: &'a redis::Script,
    keys: &super::keys::Keys,
    queue: &str,
) -> redis::ScriptInvocation<'a> {
    let tag = keys.queue(queue);
    let mut invocation = script.key(&tag);
    invocation.key(format!("{tag}:route"));
    invocation
}

/// Runs `verb` of a script whose first argument names what to do (`lua/dependencies.lua`,
/// `lua/groups.lua`) on `queue`, with `args` after it.
pub(super) async fn verb_on_queue<T: redis::FromRedisValue>(
    driver: &super::RedisDriver,
    script: &redis::Script,
    op: crate::driver::Operation,
    queue: &str,
    verb: &str,
    args: &[String],
) -> Result<T, crate::error::JobError> {
    let mut invocation = on_queue(script, driver.keys(), queue);
    invocation.arg(verb);
    for arg in args {
        invocation.arg(arg);
    }
    driver.conn().script(op, &invocation).await
}
