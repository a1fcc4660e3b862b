//! Claim floors: where each queue's and tenant's claimable rows begin, as this driver last saw
//! them, so a claim seeks there (`job_claim_from.sql`) instead of walking from the start of the
//! range through every row version earlier claims left behind.
//!
//! Those versions are dead, and their entries in the claim's index go only when vacuum removes
//! them, which it cannot while any older snapshot is open (a long report, `pg_dump`, an idle
//! transaction): a claim that starts at the head of the range then visits every row claimed
//! since, and slows down with each (measured: 8,902 jobs/s fell to 951/s within 60 s of one
//! idle `REPEATABLE READ` transaction). From a floor it visits none of them.
//!
//! A floor is a lower bound, never a reservation: moving it too far would only delay a row, and
//! three things keep that bounded.
//!
//! - **The margin.** A row is stamped due when its enqueue starts and seen when it commits; a
//!   floor never passes `now - MARGIN`, so a row whose enqueue commits within that margin is
//!   read in due order.
//! - **Full claims.** At least every [`RESCAN_MIN`], and whenever the clock went back, this
//!   driver's own publish could wake a row out of order, or a queue has more than
//!   [`MAX_KNOWN_TENANTS`] tenants, the claim is the full `job_claim.sql`: from the head of
//!   every range, with lapsed leases. Its spacing grows with its cost (at most
//!   1/[`RESCAN_COST_SHARE`] of the time), so under a held snapshot it stays cheap.
//! - **This driver's own enqueues** lower the floor to the rows they insert, exactly.
//!
//! **Priorities.** A position includes the row's priority: the claim reads a tenant's rows by
//! (priority, highest first; run_at; id), so a floor is a `(rank, run_at, id)` position, the
//! rank being the priority negated (`x_jobs_fair_idx` keeps `-priority` ascending, so one row
//! comparison seeks it). The margin caps a floor at `now - MARGIN` within its own class and
//! never past the start of the default class there: a row of the default priority, or of the
//! floor's own, that another process enqueues is read in order as before. A row that another
//! process enqueues at a priority above a tenant's floor's class (or, behind a floor in a lower
//! class, above the default) lies behind the floor: the next full claim finds it, within
//! [`RESCAN_MIN`]..[`RESCAN_MAX`], as any row another process makes due behind a floor; rows
//! this driver enqueues lower the floor to them at once.
//!
//! **Known-tenant claims.** Before the claim the [`Plan`] names, the driver may try the lean
//! `job_claim_known.sql` ([`ClaimFloors::known`]): the known tenants from their floors and
//! nothing else, no search for new tenants, no lapsed leases, a few plan nodes instead of about
//! 110. It runs only while what it leaves out can wait a little: after a claim that searched
//! (for [`KNOWN_RUN`], or once within [`KNOWN_AFTER_IDLE`], as a wake after a quiet spell),
//! when that search found every tenant and no lapsed lease, and while no enqueue of this driver
//! named a tenant the floors do not know. A queue where that search found no tenant at all
//! (a worker's other queues, empty) has nothing to claim in it and does not stop it. An empty
//! answer is never final: the planned claim runs at once in the same call, so a worker never
//! idles on it.
//! A claim whose floors know one tenant in all its queues (the common case: one queue with
//! rows, of one tenant or none) runs its one-tenant form, `job_claim_one.sql`, on that queue:
//! the same rows, without the turns across tenants.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::clock::Timestamp;

/// Where a tenant's claimable rows are read from: `(rank, run_at, id)`, the claim's order (the
/// rank is the priority negated, so the highest priority comes first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub rank: i16,
    pub at: Timestamp,
    pub id: Uuid,
}

impl Position {
    /// The position of a row of `priority` due at `at` with `id`.
    pub(crate) fn of(priority: i16, at: Timestamp, id: Uuid) -> Self {
        Position {
            rank: -priority,
            at,
            id,
        }
    }

    /// The first position at `at` in class `rank`.
    fn start_of(rank: i16, at: Timestamp) -> Self {
        Position {
            rank,
            at,
            id: Uuid::nil(),
        }
    }

    /// This position, moved back to where a floor may stand at `now` (see the module's note on
    /// priorities): no later than `now - MARGIN` in its own class, nor than that instant in the
    /// default class.
    fn settled(self, now: Timestamp) -> Self {
        self.min(settled_floor(now, self.rank))
    }
}

/// How far behind `now` a floor stays, for rows whose enqueue commits a little after it
/// stamped them due.
pub(crate) const MARGIN: Duration = Duration::from_millis(100);
/// Full claims run at least this often: they reclaim lapsed leases and pick up rows that were
/// committed long after they were stamped due (a caller's long transaction).
pub(crate) const RESCAN_MIN: Duration = Duration::from_millis(250);
/// ... and at most this far apart, however slow they get.
pub(crate) const RESCAN_MAX: Duration = Duration::from_secs(15);
/// A full claim may take at most this share (1/n) of the time between two of them.
pub(crate) const RESCAN_COST_SHARE: u32 = 20;
/// The most tenants a queue's floors keep; a queue with more is claimed by full claims.
pub(crate) const MAX_KNOWN_TENANTS: usize = 16;
/// A skip scan stops after this many tenants in one gap (`job_claim_from.sql`).
pub(crate) const DISCOVERY_LIMIT: i32 = 64;
/// Known-tenant claims may follow one another for this long after a claim that searched, so
/// a new tenant or a lapsed lease waits at most this long behind a busy worker ...
pub(crate) const KNOWN_RUN: Duration = Duration::from_millis(50);
/// ... and one known-tenant claim may come first within this long of it (a wake after a quiet
/// spell), the next claim searching again.
pub(crate) const KNOWN_AFTER_IDLE: Duration = Duration::from_secs(1);

/// The floors of one driver, shared by its clones and every claimer on it.
#[derive(Debug, Default)]
pub(crate) struct ClaimFloors {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    queues: HashMap<String, QueueFloors>,
    last_full: Option<FullClaim>,
    /// The `now` of the latest claim: a claim with an earlier one runs full.
    last_now: Option<Timestamp>,
    /// Set by an operation that may have made a row due behind a floor.
    stale: bool,
    /// The latest claim that searched (full or from the floors).
    last_search: Option<Search>,
    /// Whether a known-tenant claim ran since then.
    known_since_search: bool,
}

#[derive(Debug)]
struct Search {
    at: Instant,
    now: Timestamp,
}

#[derive(Debug)]
struct FullClaim {
    at: Instant,
    now: Timestamp,
    took: Duration,
}

#[derive(Debug, Default)]
struct QueueFloors {
    /// Known tenants (`""` for none) and where their claimable rows begin.
    tenants: BTreeMap<String, Position>,
    /// No tenant outside `tenants` has a claimable row due before this.
    discovery: Option<Timestamp>,
    /// No running row's lease lapsed before this, but for those seen here.
    lapse: Option<Timestamp>,
    /// More tenants than the floors keep: full claims only, until then.
    crowded_until: Option<Instant>,
    /// The latest floor claim found a lapsed lease (it may still wait for a slot).
    lapse_seen: bool,
    /// This driver enqueued for a tenant the floors did not know, since the last search.
    unknown_enqueued: bool,
}

impl QueueFloors {
    /// Too many tenants to keep: full claims for a while, then the floors try again.
    fn crowd(&mut self) {
        self.crowded_until = Some(Instant::now() + RESCAN_MAX);
        self.tenants.clear();
        self.discovery = None;
    }

    /// Whether a claim of the known tenants alone misses nothing the last search knew of (a
    /// queue whose search found no tenant has none to claim: a worker's other queues, empty).
    fn known_suffice(&self) -> bool {
        self.discovery.is_some()
            && self
                .crowded_until
                .is_none_or(|until| Instant::now() >= until)
            && !self.lapse_seen
            && !self.unknown_enqueued
    }
}

/// What the next claim reads.
#[derive(Debug, PartialEq)]
pub(crate) enum Plan {
    /// `job_claim.sql`: every range from its head, lapsed leases included.
    Full,
    /// `job_claim_from.sql`, from these floors.
    From(FromFloors),
}

/// The floors `job_claim_from.sql` binds: the known tenants as aligned arrays, and one
/// discovery floor per demanded queue (in the demand's order).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FromFloors {
    pub queue: Vec<String>,
    pub tenant: Vec<String>,
    pub rank: Vec<i16>,
    pub at: Vec<Timestamp>,
    pub id: Vec<Uuid>,
    pub discovery: Vec<Option<Timestamp>>,
    pub lapse: Vec<Option<Timestamp>>,
}

impl FromFloors {
    /// Binds `queue`'s known tenants and their floors.
    fn push_tenants(&mut self, queue: &str, tenants: &BTreeMap<String, Position>) {
        for (tenant, at) in tenants {
            self.queue.push(queue.to_string());
            self.tenant.push(tenant.clone());
            self.rank.push(at.rank);
            self.at.push(at.at);
            self.id.push(at.id);
        }
    }
}

/// One row a claim took, for the floors.
#[derive(Debug, Clone)]
pub(crate) struct Taken {
    pub queue: String,
    pub tenant: String,
    pub at: Position,
}

/// One tenant a floor claim probed, and its first claimable row (`None`: it had none).
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub queue: String,
    pub tenant: String,
    pub at: Option<Position>,
}

/// A queue a floor claim probed for lapsed leases, and the earliest it found (`None`: none).
#[derive(Debug, Clone)]
pub(crate) struct Lapse {
    pub queue: String,
    pub at: Option<Timestamp>,
}

impl ClaimFloors {
    /// The known tenants' floors, when a claim of `queues` at `now` may read only those
    /// (`job_claim_known.sql`) before the claim [`ClaimFloors::plan`] names; `None`: it may not.
    pub(crate) fn known(&self, queues: &[&str], now: Timestamp) -> Option<FromFloors> {
        self.known_at(queues, now, Instant::now())
    }

    /// [`ClaimFloors::known`] at the instant `instant`.
    fn known_at(&self, queues: &[&str], now: Timestamp, instant: Instant) -> Option<FromFloors> {
        let state = self.lock();
        let search = state.last_search.as_ref()?;
        if state.stale || state.last_now.is_some_and(|last| now < last) || now < search.now {
            return None;
        }
        let within = |span: Duration| {
            instant.saturating_duration_since(search.at) < span
                && now - search.now < chrono_duration(span)
        };
        if !(within(KNOWN_RUN) || (!state.known_since_search && within(KNOWN_AFTER_IDLE))) {
            return None;
        }
        let mut from = FromFloors::default();
        for queue in queues {
            let floors = state.queues.get(*queue)?;
            if !floors.known_suffice() {
                return None;
            }
            from.push_tenants(queue, &floors.tenants);
        }
        // No queue has a tenant to claim from: the planned claim looks.
        (!from.tenant.is_empty()).then_some(from)
    }

    /// After a known-tenant claim at `now` that took rows (the floors stay: a row it skipped
    /// as locked may come back if its claimer rolls back).
    pub(crate) fn after_known(&self, now: Timestamp) {
        let mut state = self.lock();
        state.last_now = Some(now);
        state.known_since_search = true;
    }

    /// What the claim of `queues` at `now` should read.
    pub(crate) fn plan(&self, queues: &[&str], now: Timestamp) -> Plan {
        let mut state = self.lock();
        if state.last_now.is_some_and(|last| now < last) {
            // The clock went back (a test's): every floor may stand ahead of the rows.
            *state = State::default();
            return Plan::Full;
        }
        let Some(full) = &state.last_full else {
            return Plan::Full;
        };
        let every = rescan_interval(full.took);
        let due = full.at.elapsed() >= every || now - full.now >= chrono_duration(every);
        if state.stale || due {
            return Plan::Full;
        }
        let mut from = FromFloors::default();
        for queue in queues {
            let Some(floors) = state.queues.get(*queue) else {
                return Plan::Full;
            };
            if floors
                .crowded_until
                .is_some_and(|until| Instant::now() < until)
            {
                return Plan::Full;
            }
            from.push_tenants(queue, &floors.tenants);
            from.discovery.push(floors.discovery);
            from.lapse.push(floors.lapse);
        }
        Plan::From(from)
    }

    /// After a full claim of `queues` at `now` that took `taken` and ran for `took`: each
    /// tenant it served reads from the first row it took (or `now - MARGIN`, if earlier); the
    /// other known tenants keep their floors.
    pub(crate) fn after_full(
        &self,
        queues: &[&str],
        now: Timestamp,
        taken: &[Taken],
        started: Instant,
        took: Duration,
    ) {
        let mut state = self.lock();
        state.last_full = Some(FullClaim {
            at: started,
            now,
            took,
        });
        state.last_now = Some(now);
        state.stale = false;
        state.last_search = Some(Search { at: started, now });
        state.known_since_search = false;
        for queue in queues {
            let floors = state.queues.entry(queue.to_string()).or_default();
            let mut first: BTreeMap<&str, Position> = BTreeMap::new();
            for row in taken.iter().filter(|t| t.queue == *queue) {
                let at = first.entry(&row.tenant).or_insert(row.at);
                *at = (*at).min(row.at);
            }
            for (tenant, at) in first {
                floors.tenants.insert(tenant.to_string(), at.settled(now));
            }
            if floors.tenants.len() > MAX_KNOWN_TENANTS {
                floors.crowd();
            }
        }
    }

    /// After a floor claim of `queues` at `now`, begun at `started`, that probed `heads`: each
    /// tenant reads from its head (or `now - MARGIN`, if earlier; from `now - MARGIN` when it
    /// had none), and a queue
    /// whose gaps were searched to the end looks for new tenants from `now - MARGIN`; each
    /// queue's lapsed leases are read from the earliest found (or `now`).
    pub(crate) fn after_from(
        &self,
        queues: &[&str],
        now: Timestamp,
        started: Instant,
        heads: &[Head],
        lapses: &[Lapse],
    ) {
        let limit = settled_floor(now, DEFAULT_RANK);
        let mut state = self.lock();
        state.last_now = Some(now);
        state.last_search = Some(Search { at: started, now });
        state.known_since_search = false;
        for queue in queues {
            let floors = state.queues.entry(queue.to_string()).or_default();
            if let Some(lapse) = lapses.iter().find(|l| l.queue == *queue) {
                floors.lapse_seen = lapse.at.is_some();
                // No margin: a lease is written at least a visibility timeout ahead of the
                // clock that writes it, so none can appear behind `now`.
                let floor = match lapse.at {
                    Some(at) => at.min(now),
                    None => now,
                };
                floors.lapse = Some(floors.lapse.map_or(floor, |old| old.max(floor)));
            }
            let mut discovered = 0usize;
            for head in heads.iter().filter(|h| h.queue == *queue) {
                let known = floors.tenants.contains_key(&head.tenant);
                let floor = match head.at {
                    Some(at) => at.settled(now),
                    None => limit,
                };
                if !known {
                    discovered += 1;
                }
                let entry = floors.tenants.entry(head.tenant.clone()).or_insert(floor);
                // A floor only moves forward here: lowering is for enqueues and full claims.
                *entry = (*entry).max(floor);
            }
            // A gap's skip scan that stopped at its limit may have left tenants unseen.
            if discovered < DISCOVERY_LIMIT as usize {
                floors.discovery = Some(limit.at);
                floors.unknown_enqueued = false;
            }
            if floors.tenants.len() > MAX_KNOWN_TENANTS {
                // Keep the tenants that had rows.
                let live: Vec<String> = heads
                    .iter()
                    .filter(|h| h.queue == *queue && h.at.is_some())
                    .map(|h| h.tenant.clone())
                    .collect();
                floors.tenants.retain(|tenant, _| live.contains(tenant));
                if floors.tenants.len() > MAX_KNOWN_TENANTS {
                    floors.crowd();
                } else {
                    // The tenants let go are unknown again: look for them from the start.
                    floors.discovery = None;
                }
            }
        }
    }

    /// A row of `queue` and `tenant` was made due at `at` by this driver: read from there.
    pub(crate) fn lower(&self, queue: &str, tenant: Option<&str>, at: Position) {
        self.lower_all([(queue, tenant, at)]);
    }

    /// [`ClaimFloors::lower`] for many rows, under one lock.
    pub(crate) fn lower_all<'a>(
        &self,
        rows: impl IntoIterator<Item = (&'a str, Option<&'a str>, Position)>,
    ) {
        let mut state = self.lock();
        for (queue, tenant, at) in rows {
            let Some(floors) = state.queues.get_mut(queue) else {
                continue;
            };
            match floors.tenants.get_mut(tenant.unwrap_or("")) {
                Some(floor) => *floor = (*floor).min(at),
                None => {
                    floors.unknown_enqueued = true;
                    if let Some(discovery) = &mut floors.discovery {
                        *discovery = (*discovery).min(at.at);
                    }
                }
            }
        }
    }

    /// Something may have made a row due behind a floor: the next claim runs full.
    pub(crate) fn forget(&self) {
        self.lock().stale = true;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How often full claims run after one that took `took`.
fn rescan_interval(took: Duration) -> Duration {
    (took * RESCAN_COST_SHARE).clamp(RESCAN_MIN, RESCAN_MAX)
}

/// The rank of the default priority.
const DEFAULT_RANK: i16 = -crate::driver::DEFAULT_PRIORITY;

/// The furthest a floor in class `rank` may stand at `now`: `now - MARGIN` in that class, or in
/// the default class when `rank` is a lower priority's.
fn settled_floor(now: Timestamp, rank: i16) -> Position {
    Position::start_of(rank.min(DEFAULT_RANK), now - chrono_duration(MARGIN))
}

fn chrono_duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        chrono::DateTime::from_timestamp_millis(1_700_000_000_000 + ms).expect("a time")
    }

    fn pos(ms: i64) -> Position {
        Position {
            rank: 0,
            at: at(ms),
            id: Uuid::from_u128(ms as u128),
        }
    }

    fn taken(queue: &str, tenant: &str, ms: i64) -> Taken {
        Taken {
            queue: queue.into(),
            tenant: tenant.into(),
            at: pos(ms),
        }
    }

    fn from(plan: Plan) -> FromFloors {
        match plan {
            Plan::From(from) => from,
            Plan::Full => panic!("a full claim"),
        }
    }

    #[test]
    fn the_first_claim_is_full_and_the_next_reads_from_the_first_row_taken() {
        let floors = ClaimFloors::default();
        assert_eq!(floors.plan(&["q"], at(10_000)), Plan::Full);
        floors.after_full(
            &["q"],
            at(10_000),
            &[taken("q", "", 5_000), taken("q", "", 4_000)],
            Instant::now(),
            Duration::from_millis(1),
        );
        let next = from(floors.plan(&["q"], at(10_001)));
        assert_eq!(next.tenant, vec![""]);
        assert_eq!((next.at[0], next.id[0]), (pos(4_000).at, pos(4_000).id));
        assert_eq!(next.discovery, vec![None]);
    }

    #[test]
    fn a_floor_keeps_its_class_and_never_passes_the_default_class() {
        let floors = ClaimFloors::default();
        let now = at(20_000);
        let margin = MARGIN.as_millis() as i64;
        let in_class = |tenant: &str, rank: i16, ms: i64| Taken {
            queue: "q".into(),
            tenant: tenant.into(),
            at: Position { rank, ..pos(ms) },
        };
        floors.after_full(
            &["q"],
            now,
            &[
                // A high class's head within the margin: held back within its class.
                in_class("high", -3, 19_990),
                // A low class's head: never past the start of the default class at the margin.
                in_class("low", 2, 5_000),
                // A high class's head well behind the margin stays where it is.
                in_class("old", -5, 1_000),
            ],
            Instant::now(),
            Duration::ZERO,
        );
        let next = from(floors.plan(&["q"], at(20_001)));
        let floor = |tenant: &str| {
            let i = next.tenant.iter().position(|t| t == tenant).expect("known");
            (next.rank[i], next.at[i], next.id[i])
        };
        assert_eq!(floor("high"), (-3, at(20_000 - margin), Uuid::nil()));
        assert_eq!(floor("low"), (0, at(20_000 - margin), Uuid::nil()));
        assert_eq!(floor("old"), (-5, pos(1_000).at, pos(1_000).id));
        // This driver's enqueue of a higher class lowers the floor to it exactly.
        let row = Position::of(4, at(19_999), Uuid::from_u128(7));
        floors.lower("q", Some("low"), row);
        let next = from(floors.plan(&["q"], at(20_002)));
        let i = next.tenant.iter().position(|t| t == "low").expect("known");
        assert_eq!((next.rank[i], next.at[i], next.id[i]), (-4, row.at, row.id));
    }

    #[test]
    fn a_floor_never_passes_now_less_the_margin() {
        let floors = ClaimFloors::default();
        floors.after_full(
            &["q"],
            at(20_000),
            &[taken("q", "a", 19_990)],
            Instant::now(),
            Duration::ZERO,
        );
        let next = from(floors.plan(&["q"], at(20_000)));
        assert_eq!(next.at[0], at(20_000 - MARGIN.as_millis() as i64));
        // A tenant with nothing claimable reads from now - MARGIN; one with a head from there.
        floors.after_from(
            &["q"],
            at(20_000),
            Instant::now(),
            &[
                Head {
                    queue: "q".into(),
                    tenant: "a".into(),
                    at: None,
                },
                Head {
                    queue: "q".into(),
                    tenant: "b".into(),
                    at: Some(pos(15_000)),
                },
            ],
            &[Lapse {
                queue: "q".into(),
                at: Some(at(12_000)),
            }],
        );
        let next = from(floors.plan(&["q"], at(20_000)));
        assert_eq!(next.tenant, vec!["a", "b"]);
        assert_eq!(next.at, vec![at(19_900), at(15_000)]);
        assert_eq!(next.discovery, vec![Some(at(19_900))]);
        assert_eq!(next.lapse, vec![Some(at(12_000))]);
    }

    #[test]
    fn an_enqueue_lowers_the_floor_of_its_tenant_or_the_discovery_floor() {
        let floors = ClaimFloors::default();
        floors.after_full(
            &["q"],
            at(10_000),
            &[taken("q", "", 9_000)],
            Instant::now(),
            Duration::ZERO,
        );
        floors.after_from(&["q"], at(10_000), Instant::now(), &[], &[]);
        floors.lower("q", None, pos(8_000));
        floors.lower("q", Some("new"), pos(7_000));
        let next = from(floors.plan(&["q"], at(10_000)));
        assert_eq!(next.at, vec![at(8_000)]);
        assert_eq!(next.discovery, vec![Some(at(7_000))]);
    }

    #[test]
    fn a_clock_gone_back_a_stale_driver_and_time_passing_make_full_claims() {
        let floors = ClaimFloors::default();
        let started = Instant::now();
        floors.after_full(&["q"], at(10_000), &[], started, Duration::ZERO);
        assert!(matches!(floors.plan(&["q"], at(10_000)), Plan::From(_)));
        assert_eq!(
            floors.plan(&["q"], at(10_000 + RESCAN_MIN.as_millis() as i64)),
            Plan::Full
        );
        assert_eq!(floors.plan(&["other"], at(10_000)), Plan::Full);
        floors.forget();
        assert_eq!(floors.plan(&["q"], at(10_000)), Plan::Full);
        floors.after_full(&["q"], at(10_000), &[], started, Duration::ZERO);
        assert!(matches!(floors.plan(&["q"], at(10_000)), Plan::From(_)));
        assert_eq!(floors.plan(&["q"], at(9_999)), Plan::Full);
        // Every floor went with the clock: the next claim is full whatever its time.
        assert_eq!(floors.plan(&["q"], at(10_000)), Plan::Full);
    }

    #[test]
    fn a_slow_full_claim_spaces_the_next_ones_out() {
        assert_eq!(rescan_interval(Duration::ZERO), RESCAN_MIN);
        assert_eq!(
            rescan_interval(Duration::from_millis(100)),
            Duration::from_secs(2)
        );
        assert_eq!(rescan_interval(Duration::from_secs(60)), RESCAN_MAX);
    }

    #[test]
    fn a_queue_with_too_many_tenants_is_claimed_in_full() {
        let floors = ClaimFloors::default();
        let many: Vec<Taken> = (0..=MAX_KNOWN_TENANTS as i64)
            .map(|n| taken("q", &format!("t{n:02}"), 1_000 + n))
            .collect();
        floors.after_full(&["q"], at(10_000), &many, Instant::now(), Duration::ZERO);
        assert_eq!(floors.plan(&["q"], at(10_000)), Plan::Full);
    }

    fn head(tenant: &str, ms: Option<i64>) -> Head {
        Head {
            queue: "q".into(),
            tenant: tenant.into(),
            at: ms.map(pos),
        }
    }

    fn lapse(ms: Option<i64>) -> Lapse {
        Lapse {
            queue: "q".into(),
            at: ms.map(at),
        }
    }

    /// Floors after a full claim and a floor claim at 10 s that found tenant "a" and no lapse.
    fn searched(started: Instant) -> ClaimFloors {
        let floors = ClaimFloors::default();
        floors.after_full(&["q"], at(10_000), &[], started, Duration::ZERO);
        floors.after_from(
            &["q"],
            at(10_000),
            started,
            &[head("a", Some(9_000))],
            &[lapse(None)],
        );
        floors
    }

    #[test]
    fn known_tenant_claims_follow_a_clean_search_for_a_short_run() {
        let t0 = Instant::now();
        let floors = searched(t0);
        let known = floors
            .known_at(&["q"], at(10_010), t0 + Duration::from_millis(10))
            .expect("a known-tenant claim");
        assert_eq!(
            (known.tenant, known.at),
            (vec!["a".into()], vec![at(9_000)])
        );
        floors.after_known(at(10_010));
        // Within the run, by both clocks: again.
        assert!(floors
            .known_at(&["q"], at(10_040), t0 + Duration::from_millis(40))
            .is_some());
        // Past the run, a known claim already ran since the search: the next claim searches.
        let late = KNOWN_RUN.as_millis() as i64 + 10_000;
        assert!(floors
            .known_at(&["q"], at(late), t0 + Duration::from_millis(40))
            .is_none());
        assert!(floors
            .known_at(&["q"], at(10_040), t0 + KNOWN_RUN)
            .is_none());
        // Another search: one known claim may come first after a quiet spell, not two.
        floors.after_from(&["q"], at(10_100), t0, &[head("a", None)], &[lapse(None)]);
        let quiet = t0 + Duration::from_millis(500);
        assert!(floors.known_at(&["q"], at(10_600), quiet).is_some());
        floors.after_known(at(10_600));
        assert!(floors.known_at(&["q"], at(10_601), quiet).is_none());
        // Nor after a longer one, nor for a queue the floors do not know.
        floors.after_from(&["q"], at(10_700), t0, &[head("a", None)], &[lapse(None)]);
        assert!(floors
            .known_at(&["q"], at(10_700), t0 + KNOWN_AFTER_IDLE)
            .is_none());
        assert!(floors.known_at(&["q", "other"], at(10_700), t0).is_none());
    }

    #[test]
    fn what_a_known_tenant_claim_would_miss_makes_the_next_claim_search() {
        let t0 = Instant::now();
        let soon = t0 + Duration::from_millis(1);
        // A lapsed lease seen by the search.
        let floors = searched(t0);
        floors.after_from(
            &["q"],
            at(10_000),
            t0,
            &[head("a", None)],
            &[lapse(Some(9_500))],
        );
        assert!(floors.known_at(&["q"], at(10_001), soon).is_none());
        floors.after_from(&["q"], at(10_000), t0, &[head("a", None)], &[lapse(None)]);
        assert!(floors.known_at(&["q"], at(10_001), soon).is_some());
        // An enqueue of this driver for a tenant the floors do not know, until a search.
        floors.lower("q", Some("new"), pos(10_000));
        assert!(floors.known_at(&["q"], at(10_001), soon).is_none());
        floors.after_from(
            &["q"],
            at(10_000),
            t0,
            &[head("new", Some(10_000))],
            &[lapse(None)],
        );
        let known = floors.known_at(&["q"], at(10_001), soon).expect("known");
        assert_eq!(known.tenant, vec!["a".to_string(), "new".to_string()]);
        // An enqueue for a known tenant lowers its floor and keeps the claim lean.
        floors.lower("q", Some("a"), pos(8_000));
        let known = floors.known_at(&["q"], at(10_001), soon).expect("known");
        assert_eq!(known.at[0], at(8_000));
        // A publish (or anything that forgets), and a clock gone back.
        assert!(floors.known_at(&["q"], at(9_999), soon).is_none());
        floors.forget();
        assert!(floors.known_at(&["q"], at(10_001), soon).is_none());
        // A full claim alone never searched the gaps: no discovery floor, no known claim.
        let fresh = ClaimFloors::default();
        fresh.after_full(
            &["q"],
            at(10_000),
            &[taken("q", "a", 9_000)],
            t0,
            Duration::ZERO,
        );
        assert!(fresh.known_at(&["q"], at(10_001), soon).is_none());
    }

    #[test]
    fn a_worker_s_other_queues_found_empty_leave_the_claim_lean() {
        let t0 = Instant::now();
        let soon = t0 + Duration::from_millis(1);
        // A worker of three queues; the search found tenant "a" in "q" and nothing in the others.
        let floors = searched(t0);
        let queues = ["q", "empty", "idle"];
        floors.after_full(&queues, at(10_000), &[], t0, Duration::ZERO);
        floors.after_from(
            &queues,
            at(10_000),
            t0,
            &[head("a", Some(9_000))],
            &[lapse(None)],
        );
        let known = floors.known_at(&queues, at(10_001), soon).expect("known");
        assert_eq!(
            (known.queue, known.tenant),
            (vec!["q".to_string()], vec!["a".to_string()])
        );
        // Nothing known anywhere: the planned claim looks.
        let bare = ClaimFloors::default();
        bare.after_full(&["empty"], at(10_000), &[], t0, Duration::ZERO);
        bare.after_from(&["empty"], at(10_000), t0, &[], &[]);
        assert!(bare.known_at(&["empty"], at(10_001), soon).is_none());
        // This driver enqueued into an empty queue: a tenant the floors do not know there.
        floors.lower("empty", None, pos(10_000));
        assert!(floors.known_at(&queues, at(10_001), soon).is_none());
    }
}
