//! How a worker spreads its claims over the pending tasks (docs/protocol.md,
//! "Spreading claims"): which part of the pending index each poll reads,
//! and which of the tasks found there it claims. Everything here is a fixed
//! function of the worker's identity, the polls it sent and what its own
//! polls and claims met: the protocol draws no randomness.
//!
//! - **The index is cut into arcs.** Pending tasks are filed by their spot
//!   (`TaskId::spot`), spread evenly over the `u32` range. A poll reads one
//!   arc of `2^(32 - share_log2)` spots, chosen anew for each poll from the
//!   identity and the poll count, and claims one of the tasks in it, chosen
//!   the same way. So each task is in the reach of one poll in
//!   `2^share_log2`, and a page holds one arc's tasks however long the
//!   queue.
//! - **`share_log2` is learnt from lost races.** It starts at 0 (the whole
//!   index: a small fleet races rarely and claims as it always did), grows
//!   with each race lost (by 1, then 2, then 4 for losses in a row, so a
//!   large fleet is found in a few) and shrinks by 1 after
//!   `WIDEN_AFTER_WINS` races won in a row.
//! - **Nothing waits for ever.** Every `LOOK_EVERY`-th poll of a worker
//!   with a share reads the whole index instead, and claims only a task
//!   that was pending already at the worker's previous such look (its
//!   version is at most the newest the worker had seen then): a task no arc
//!   happened to reach. Finding one means the share is too narrow for the
//!   tasks there are (the tail of a backlog, a fleet that has shrunk), and
//!   halves `share_log2`. Fresh tasks are left to the arcs, so looking
//!   around starts no race for them.

use crate::docs::Owner;
use leasehold_interface::Version;

pub(super) const MAX_SHARE_LOG2: u8 = 16;
/// Races won in a row before the share doubles again: in a steady crowd a
/// worker loses about one race in this many plus one. (With 16 a worker
/// of a small fleet, which loses a race now and then whatever its share,
/// kept a narrow one longer, and its tasks waited longer to be claimed.)
pub(super) const WIDEN_AFTER_WINS: u8 = 8;
/// The most a single lost race narrows the share by (powers of two). A
/// fleet booting onto a backlog races for the head of the index all at
/// once; steps of eight left it arcs too narrow for the backlog's last tasks
/// a while longer (the load chart's 3,000 x 10 task-mode fleet filled its
/// slots in 52.9 s against 45.9 s), for no fewer lost races.
const MAX_NARROW_STEP: u8 = 4;
/// Every this many polls, a worker with a share looks around. (Every 16th
/// filled a fleet booting onto a backlog slower; every 8th made the
/// documents polls read per event grow 1.45 times from 10 to 1,000 workers
/// on the scaled one-hour scenarios, near the 1.5 that tests/work_per_event.rs
/// allows.)
pub(super) const LOOK_EVERY: u8 = 12;

const _: () = assert!(MAX_SHARE_LOG2 < 32, "an arc holds at least one spot");
const _: () = assert!(LOOK_EVERY > 1, "most polls read an arc");

/// One worker incarnation's claim spreading. Kept in a box beside the
/// worker: only polls and claim replies read it, and the worker's own size
/// is held to the host's layout (see `Worker`).
#[derive(Clone, Debug)]
pub(super) struct ClaimSpread {
    /// The identity, mixed once.
    me: u64,
    /// Polls sent, wrapping.
    polls: u32,
    /// At most `MAX_SHARE_LOG2`.
    share_log2: u8,
    /// Races won since the share last changed, below `WIDEN_AFTER_WINS`.
    wins: u8,
    /// Races lost in a row, at most `MAX_SHARE_LOG2`.
    losses: u8,
    /// Polls since the last look around, below `LOOK_EVERY`.
    polls_since_look: u8,
    /// The poll in flight reads the whole index to look around.
    looking_around: bool,
    /// A claim from a poll's page is in flight.
    claiming: bool,
    /// The newest version our poll replies have shown.
    seen: Version,
    /// `seen` at our last look around, once we have looked: a task at or
    /// below it was pending already then.
    seen_at_last_look: Option<Version>,
}

/// Where a poll reads: the spots `[start, end)`, `end` at most `2^32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Arc {
    pub start: u32,
    pub end: u64,
}

/// The whole index.
const WHOLE: Arc = Arc {
    start: 0,
    end: 1 << 32,
};

impl ClaimSpread {
    pub(super) fn new(me: Owner) -> Box<ClaimSpread> {
        let identity = (u64::from(me.worker) << 32) | u64::from(me.incarnation);
        Box::new(ClaimSpread {
            me: mix64(identity ^ 0x9e37_79b9_7f4a_7c15),
            polls: 0,
            share_log2: 0,
            wins: 0,
            losses: 0,
            polls_since_look: 0,
            looking_around: false,
            claiming: false,
            seen: 0,
            seen_at_last_look: None,
        })
    }

    /// The arc the poll about to be sent reads, and one more poll counted.
    pub(super) fn next_arc(&mut self) -> Arc {
        self.polls = self.polls.wrapping_add(1);
        let log2 = self.share_log2;
        debug_assert!(log2 <= MAX_SHARE_LOG2 && self.polls_since_look < LOOK_EVERY);
        self.looking_around = log2 > 0 && self.polls_since_look + 1 == LOOK_EVERY;
        if log2 == 0 || self.looking_around {
            self.polls_since_look = 0;
            return WHOLE;
        }
        self.polls_since_look += 1;
        let width = 1u64 << (32 - log2);
        // The top `log2` bits of a draw pick one of the `2^log2` arcs.
        let start = (self.draw(u64::MAX) >> (64 - log2)) * width;
        Arc {
            start: start as u32,
            end: start + width,
        }
    }

    /// Whether a candidate at `version` in the page of the poll in flight
    /// may be claimed: any in an arc; looking around, only one that was
    /// pending already at our last look (at the first look, before this
    /// poll).
    pub(super) fn may_claim(&self, version: Version) -> bool {
        !self.looking_around || version <= self.seen_at_last_look.unwrap_or(self.seen)
    }

    /// Which of a page's `candidates` (at least one) to claim.
    pub(super) fn pick(&self, candidates: usize) -> usize {
        assert!(candidates > 0);
        (self.draw(0) % candidates as u64) as usize
    }

    /// A poll's page was read: the newest version it showed (0 for none),
    /// and whether it held anything to claim.
    pub(super) fn page_read(&mut self, newest: Version, found: bool) {
        self.seen = self.seen.max(newest);
        if self.looking_around {
            self.seen_at_last_look = Some(self.seen);
            if found {
                // Tasks left pending since the last look: the share is too
                // narrow for the tasks there are.
                self.share_log2 /= 2;
                self.losses = 0;
            }
        }
    }

    /// A claim went out for a task from a poll's page.
    pub(super) fn claim_sent(&mut self) {
        self.claiming = true;
    }

    /// A claim of ours landed.
    pub(super) fn claim_won(&mut self) {
        if !std::mem::take(&mut self.claiming) {
            return;
        }
        self.losses = 0;
        self.wins += 1;
        if self.wins >= WIDEN_AFTER_WINS {
            self.wins = 0;
            self.share_log2 = self.share_log2.saturating_sub(1);
        }
    }

    /// A claim of ours lost its race: others claim in the arcs we read, so
    /// read narrower ones, the more so the more races in a row were lost.
    pub(super) fn claim_lost(&mut self) {
        if !std::mem::take(&mut self.claiming) {
            return;
        }
        self.wins = 0;
        let step = (1u8 << self.losses.min(2)).min(MAX_NARROW_STEP);
        self.losses = (self.losses + 1).min(MAX_SHARE_LOG2);
        self.share_log2 = (self.share_log2 + step).min(MAX_SHARE_LOG2);
    }

    /// A fixed function of the identity, the polls sent and `of`.
    fn draw(&self, of: u64) -> u64 {
        mix64(self.me ^ mix64(u64::from(self.polls) ^ of.rotate_left(32)))
    }
}

/// The finaliser of splitmix64 (Steele, Lea and Flood): every input bit
/// moves about half the output bits, so nearby identities and counters
/// give unrelated draws.
#[inline]
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(worker: u32) -> Box<ClaimSpread> {
        ClaimSpread::new(Owner {
            worker,
            incarnation: 1,
        })
    }

    fn lose(s: &mut ClaimSpread, races: usize) {
        for _ in 0..races {
            s.claim_sent();
            s.claim_lost();
        }
    }

    fn win(s: &mut ClaimSpread, races: usize) {
        for _ in 0..races {
            s.claim_sent();
            s.claim_won();
        }
    }

    #[test]
    fn a_fresh_worker_reads_the_whole_index() {
        let mut s = spread(3);
        for _ in 0..10 {
            assert_eq!(
                s.next_arc(),
                Arc {
                    start: 0,
                    end: 1 << 32
                }
            );
        }
    }

    #[test]
    fn lost_races_narrow_the_arcs_faster_when_in_a_row() {
        let mut s = spread(3);
        for expected in [1, 3, 7, 11, 15, MAX_SHARE_LOG2, MAX_SHARE_LOG2] {
            lose(&mut s, 1);
            assert_eq!(s.share_log2, expected);
        }
        // A win ends the run of losses: the next loss narrows by one.
        let mut s = spread(3);
        lose(&mut s, 2);
        win(&mut s, 1);
        lose(&mut s, 1);
        assert_eq!(s.share_log2, 4);
    }

    #[test]
    fn won_races_widen_the_arcs_again() {
        let mut s = spread(3);
        lose(&mut s, 3);
        assert_eq!(s.share_log2, 7);
        win(&mut s, usize::from(WIDEN_AFTER_WINS) - 1);
        assert_eq!(s.share_log2, 7);
        win(&mut s, 1);
        assert_eq!(s.share_log2, 6);
        // A loss starts the count of wins again.
        win(&mut s, usize::from(WIDEN_AFTER_WINS) - 1);
        lose(&mut s, 1);
        win(&mut s, usize::from(WIDEN_AFTER_WINS) - 1);
        assert_eq!(s.share_log2, 7);
        win(&mut s, 1_000);
        assert_eq!(s.share_log2, 0, "back to the whole index");
        // Replies to claims that did not come from a poll change nothing.
        s.claim_lost();
        assert_eq!(s.share_log2, 0);
    }

    #[test]
    fn arcs_cut_the_index_evenly_and_move_with_each_poll() {
        let mut s = spread(11);
        lose(&mut s, 3);
        let width = 1u64 << (32 - 7);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..1_000 {
            let arc = s.next_arc();
            if arc == WHOLE {
                continue; // a look around
            }
            assert_eq!(arc.end - u64::from(arc.start), width);
            assert_eq!(u64::from(arc.start) % width, 0, "aligned");
            seen.insert(arc.start);
        }
        // 1,000 draws of 128 arcs leave none out but by a fluke.
        assert_eq!(seen.len(), 128);
        // Workers read different arcs.
        let starts: std::collections::BTreeSet<u32> = (0..32)
            .map(|w| {
                let mut s = spread(w);
                lose(&mut s, 3);
                s.next_arc().start
            })
            .collect();
        assert!(starts.len() > 20, "{starts:?}");
    }

    /// Reads `polls` arcs (none the whole index), each page showing
    /// version `newest`.
    fn read_arcs(s: &mut ClaimSpread, polls: u8, newest: Version) {
        for _ in 0..polls {
            assert_ne!(s.next_arc(), WHOLE);
            assert!(s.may_claim(u64::MAX), "an arc's tasks are all claimable");
            s.page_read(newest, false);
        }
    }

    #[test]
    fn every_twelfth_poll_looks_around_and_claims_only_what_was_left_pending() {
        let mut s = spread(5);
        lose(&mut s, 3);
        assert_eq!(s.share_log2, 7);
        read_arcs(&mut s, LOOK_EVERY - 1, 40);
        assert_eq!(s.next_arc(), WHOLE, "the look around reads everything");
        // The first look: pending since before it (version 40 or older).
        assert!(s.may_claim(40) && !s.may_claim(41));
        s.page_read(50, false);
        assert_eq!(s.share_log2, 7, "nothing left pending: the share holds");
        // The next look claims what was pending at this one, no newer.
        read_arcs(&mut s, LOOK_EVERY - 1, 60);
        assert_eq!(s.next_arc(), WHOLE);
        assert!(s.may_claim(50) && !s.may_claim(51));
        // Something left pending since the last look: the share halves.
        s.page_read(70, true);
        assert_eq!(s.share_log2, 3);
        read_arcs(&mut s, LOOK_EVERY - 1, 70);
        assert_eq!(s.next_arc(), WHOLE);
        assert!(s.may_claim(70) && !s.may_claim(71));
        s.page_read(70, true);
        assert_eq!(s.share_log2, 1);
        // Arcs found tasks or not, the looks come every twelfth poll.
        for _ in 0..LOOK_EVERY - 1 {
            assert_ne!(s.next_arc(), WHOLE);
            s.page_read(80, true);
        }
        assert_eq!(s.next_arc(), WHOLE);
    }

    #[test]
    fn a_worker_reading_the_whole_index_never_looks_around() {
        let mut s = spread(5);
        for _ in 0..100 {
            assert_eq!(s.next_arc(), WHOLE);
            assert!(s.may_claim(u64::MAX), "every candidate is claimable");
            s.page_read(0, false);
        }
        assert_eq!(s.seen_at_last_look, None);
    }

    #[test]
    fn picks_spread_over_a_page() {
        let mut s = spread(2);
        let mut hits = [0u32; 16];
        for _ in 0..1_600 {
            s.next_arc();
            hits[s.pick(16)] += 1;
        }
        assert!(hits.iter().all(|&h| (60..=140).contains(&h)), "{hits:?}");
        assert_eq!(s.pick(1), 0);
    }
}
