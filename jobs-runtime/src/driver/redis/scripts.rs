//! The Lua scripts, each one atomic on the server and each touching one hash slot (the
//! queue's, or the store's beside the queues), loaded as one Redis function library
//! (`FUNCTION LOAD`, once per master) and called by name (`FCALL`). The queue scripts share
//! `lua/lib.lua`, the one definition of a queue's keys and of how a job changes state: as a
//! library it is made once when the library loads, not on every call as a script sent by
//! `EVALSHA` would remake it (a single enqueue's server time went from 118 to 101 us).
//!
//! The library's name carries its source's digest, and each function's name the library's, so
//! two builds of the driver running at once (a rolling deploy) each call their own functions;
//! a build that connects deletes the others' libraries (`Conn::prune_other_libraries`), and
//! one still running loads its own again at its next call.

use std::sync::{LazyLock, OnceLock};

use redis::ToRedisArgs;

/// One of the library's functions.
pub(super) struct Function {
    /// Its name within the library (`enqueue`); on the server it is `<library>_<name>`.
    name: &'static str,
    /// Its body, `lua/<name>.lua`.
    body: &'static str,
    /// Whether it works on one queue: called with the queue's tag as `KEYS[1]`, after
    /// `lib.lua`'s `begin`.
    on_queue: bool,
    /// Its name on the server, made at its first call.
    called: OnceLock<String>,
}

macro_rules! functions {
    ($($name:ident = $file:literal, $on_queue:literal;)*) => {
        $(
            pub(super) static $name: Function = Function {
                name: $file,
                body: include_str!(concat!("lua/", $file, ".lua")),
                on_queue: $on_queue,
                called: OnceLock::new(),
            };
        )*
        /// Every function, in the library's order.
        static ALL: &[&Function] = &[$(&$name),*];
    };
}

functions! {
    ENQUEUE = "enqueue", true;
    ENQUEUE_ONE = "enqueue_one", true;
    CLAIM = "claim", true;
    SETTLE = "settle", true;
    JOB = "job", true;
    DEPENDENCIES = "dependencies", true;
    GROUPS = "groups", true;
    STATS = "stats", true;
    NEXT_DUE = "next_due", true;
    PURGE = "purge", true;
    INTROSPECT_LIST = "introspect_list", true;
    INTROSPECT_VERBS = "introspect_verbs", true;
    INTROSPECT_BULK = "introspect_bulk", true;
    INTROSPECT_PAUSE = "introspect_pause", true;
    INTROSPECT_COUNTERS = "introspect_counters", true;
    EVENTS = "events", false;
    LEASE = "lease", false;
    SCHEDULER = "scheduler", false;
    BACKFILL = "backfill", false;
    BOOK = "ledger_book", false;
    WEBHOOK_LEDGER = "webhook_ledger", false;
    INTROSPECT_WORKERS = "introspect_workers", false;
}

/// The library: its name (`jobs_<digest>`) and its source, as `FUNCTION LOAD` takes it.
pub(super) struct Library {
    pub(super) name: String,
    pub(super) source: String,
}

/// What every library of this driver is named: this, then 16 hex digits of its digest.
const LIBRARY_PREFIX: &str = "jobs_";

/// Whether `name` is a library of this driver (this build's or another's).
pub(super) fn is_library_name(name: &str) -> bool {
    name.strip_prefix(LIBRARY_PREFIX)
        .is_some_and(|digest| digest.len() == 16 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The one library of this build: `lib.lua`, then each file as the body of a function taking
/// the call's keys and arguments as `KEYS` and `ARGV` (so a file reads as the script it was),
/// a queue script's body after `begin(KEYS)`, which points `lib.lua`'s key names at the queue.
pub(super) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    // Its digest names the library and, through it, its functions.
    let digest = redis::Script::new(&library_source("jobs")).get_hash()[..16].to_string();
    let name = format!("{LIBRARY_PREFIX}{digest}");
    Library {
        source: library_source(&name),
        name,
    }
});

fn library_source(name: &str) -> String {
    let mut source = format!("#!lua name={name}\n{}", include_str!("lua/lib.lua"));
    for function in ALL {
        let begin = if function.on_queue { "begin(KEYS)" } else { "" };
        source.push_str(&format!(
            "\nredis.register_function('{name}_{}', function(KEYS, ARGV) {begin}\n{}\nend)\n",
            function.name, function.body
        ));
    }
    source
}

impl Function {
    /// A call with `key` as its only key.
    pub(super) fn key(&'static self, key: impl AsRef<[u8]>) -> Call {
        self.keys(&[key.as_ref()])
    }

    /// A call with `keys` (`KEYS`), to which its arguments are added. The `FCALL` command is
    /// written as the call is made: made from lists of keys and arguments when it was sent, it
    /// copied every argument once more and named the function with a `format!`.
    pub(super) fn keys(&'static self, keys: &[&[u8]]) -> Call {
        let name = self
            .called
            .get_or_init(|| format!("{}_{}", LIBRARY.name, self.name));
        let mut cmd = redis::Cmd::with_capacity(CALL_ARGS, CALL_BYTES);
        cmd.arg("FCALL").arg(name.as_str()).arg(keys.len());
        for key in keys {
            cmd.arg(*key);
        }
        Call { cmd }
    }
}

/// Room a call's command is made with: a single enqueue's arguments and their bytes with a
/// small input (more grows it).
const CALL_ARGS: usize = 24;
const CALL_BYTES: usize = 512;

/// A call of one function: its keys (`KEYS`) and arguments (`ARGV`), sent by `Conn::script`.
pub(super) struct Call {
    cmd: redis::Cmd,
}

impl Call {
    /// Adds an argument (`ARGV[i]`).
    pub(super) fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Self {
        self.cmd.arg(arg);
        self
    }

    /// The `FCALL` command.
    pub(super) fn command(&self) -> &redis::Cmd {
        &self.cmd
    }
}

/// A queue function's call on `queue`. `KEYS[1]` is the queue's tag, which the script builds
/// every key from; `KEYS[2]` is a second name in the same slot that is never stored. Declaring
/// two keys, neither of which exists, makes a cluster node whose slot is being migrated answer
/// `TRYAGAIN` (retryable) instead of running the script on one side of a half-moved queue: a
/// script reaches keys it did not declare (jobs by id), which Redis cannot route during a
/// migration. Outside a migration the two names only route the script to the queue's master.
pub(super) fn on_queue(script: &'static Function, keys: &super::keys::Keys, queue: &str) -> Call {
    let tag = keys.queue(queue);
    let route = format!("{tag}:route");
    script.keys(&[tag.as_bytes(), route.as_bytes()])
}

/// Runs `verb` of a script whose first argument names what to do (`lua/dependencies.lua`,
/// `lua/groups.lua`) on `queue`, with `args` after it.
pub(super) async fn verb_on_queue<T: redis::FromRedisValue>(
    driver: &super::RedisDriver,
    script: &'static Function,
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
