//! How a worker spreads its claims over the pending tasks (docs/protocol.md,
//! "Spreading claims"): which part of the pending index each poll reads,
//! and which of the tasks found there it claims. Everything here is a fixed
//! function of the worker's identity, the polls it sent and what its own
//! polls and claims met: the protocol draws no randomness.
//!
//! - **The index is cut into arcs.** Pending tasks are filed by their spot
//!   (`TaskId::spot`), spread evenly over the `u32` range. A poll reads one
//!   arc of `2^(32 - e)` spots, chosen anew for each poll from the identity
//!   and the poll count among the `2^e` arcs of that size, and claims one of
//!   the tasks in it, chosen the same way. So each task is in the reach of
//!   one poll in `2^e`, and the pages stay small however long the queue.
//! - **`e` follows the crowd.** It is `share_log2` less the polls in a row
//!   that found nothing to claim: a worker that keeps finding nothing looks
//!   twice as wide each time, and one with nothing pending anywhere reads
//!   the whole index by its `share_log2`-th empty poll.
//! - **`share_log2` is learnt from lost races.** It starts at 0 (the whole
//!   index: a small fleet races rarely and claims as it always did), grows
//!   with each race lost (by 1, then 2, 4, 8 for losses in a row, so a
//!   large fleet is found in a few) and shrinks by 1 after
//!   `WIDEN_AFTER_WINS` races won in a row.

use crate::docs::Owner;

pub(super) const MAX_SHARE_LOG2: u8 = 16;
/// Races won in a row before the share doubles again: in a steady crowd a
/// worker loses about one race in this many.
pub(super) const WIDEN_AFTER_WINS: u8 = 16;
/// The most a single lost race narrows the share by (powers of two).
const MAX_NARROW_STEP: u8 = 8;

const _: () = assert!(MAX_SHARE_LOG2 < 32, "an arc holds at least one spot");

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
    /// Polls in a row that found nothing to claim, at most `MAX_SHARE_LOG2`.
    empty_polls: u8,
    /// A claim from a poll's page is in flight.
    claiming: bool,
}

/// Where a poll reads: the spots `[start, end)`, `end` at most `2^32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Arc {
    pub start: u32,
    pub end: u64,
}

impl ClaimSpread {
    pub(super) fn new(me: Owner) -> Box<ClaimSpread> {
        let identity = (u64::from(me.worker) << 32) | u64::from(me.incarnation);
        Box::new(ClaimSpread {
            me: mix64(identity ^ 0x9e37_79b9_7f4a_7c15),
            polls: 0,
            share_log2: 0,
            wins: 0,
            losses: 0,
            empty_polls: 0,
            claiming: false,
        })
    }

    /// The arc the poll about to be sent reads, and one more poll counted.
    pub(super) fn next_arc(&mut self) -> Arc {
        self.polls = self.polls.wrapping_add(1);
        let log2 = self.share_log2.saturating_sub(self.empty_polls);
        debug_assert!(log2 <= MAX_SHARE_LOG2);
        let width = 1u64 << (32 - log2);
        // The top `log2` bits of a draw pick one of the `2^log2` arcs.
        let arc = if log2 == 0 {
            0
        } else {
            self.draw(u64::MAX) >> (64 - log2)
        };
        let start = arc * width;
        Arc {
            start: start as u32,
            end: start + width,
        }
    }

    /// Which of a page's `candidates` (at least one) to claim.
    pub(super) fn pick(&self, candidates: usize) -> usize {
        assert!(candidates > 0);
        (self.draw(0) % candidates as u64) as usize
    }

    /// A poll's page was read: whether it held anything to claim.
    pub(super) fn page_read(&mut self, found: bool) {
        self.empty_polls = if found {
            0
        } else {
            (self.empty_polls + 1).min(MAX_SHARE_LOG2)
        };
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
        let step = (1u8 << self.losses.min(3)).min(MAX_NARROW_STEP);
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
        lose(&mut s, 1);
        assert_eq!(s.share_log2, 1);
        lose(&mut s, 1);
        assert_eq!(s.share_log2, 3);
        lose(&mut s, 1);
        assert_eq!(s.share_log2, 7);
        lose(&mut s, 1);
        assert_eq!(s.share_log2, 15);
        lose(&mut s, 1);
        assert_eq!(s.share_log2, MAX_SHARE_LOG2, "at most the narrowest");
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

    #[test]
    fn empty_polls_widen_the_arcs_until_the_whole_index() {
        let mut s = spread(5);
        lose(&mut s, 3);
        for empty in 0..7u8 {
            let arc = s.next_arc();
            assert_eq!(arc.end - u64::from(arc.start), 1 << (32 - 7 + empty));
            s.page_read(false);
        }
        assert_eq!(
            s.next_arc(),
            Arc {
                start: 0,
                end: 1 << 32
            }
        );
        // Something found: back to the learnt share.
        s.page_read(true);
        let arc = s.next_arc();
        assert_eq!(arc.end - u64::from(arc.start), 1 << (32 - 7));
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
