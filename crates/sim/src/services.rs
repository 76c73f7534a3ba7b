//! External effect services: the card processor, the kitchen, driver dispatch.
//!
//! Each service decides every call by its own policy (deduplication, fencing)
//! and the simulator records the decision in the effect ledger (a
//! `RecordKind::Effect` record). Services are not nodes: they never crash and
//! hold their state for the whole run, like a third-party API would.

use leasehold_interface::{EffectReply, EffectRequest};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dedup {
    /// Every call with a fresh token applies again.
    None,
    /// Deduplicates on (resource, step) when the caller sends an idempotency key.
    ByKey,
    /// Deduplicates on the resource alone, key or not (a kitchen knows the order).
    ByResource,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceSpec {
    pub name: String,
    pub dedup: Dedup,
    /// Rejects a token lower than the highest it has seen for the resource.
    pub fencing: bool,
    /// How long the service takes to act on a call, drawn per call.
    pub work_ms_min: u64,
    pub work_ms_max: u64,
}

/// Resources below this id keep their state in vectors indexed by resource;
/// above it, in B-trees. Hosts number resources densely (task ids), and at a
/// million tasks a B-tree walk per call was 5 % of a run, most of it cache
/// misses; a vector is one. Bounds the vectors at 128 MiB each.
const DENSE_RESOURCES: u64 = 1 << 24;
/// Steps a dense resource records as bits of one word.
const DENSE_STEPS: u32 = u64::BITS;

pub struct EffectService {
    pub spec: ServiceSpec,
    /// Bit `s` of entry `r`: step `s` of resource `r` applied (dense part).
    applied_dense: Vec<u64>,
    applied_sparse: BTreeSet<(u64, u32)>,
    /// Highest token seen per resource (dense part; 0 is "none yet").
    highest_dense: Vec<u64>,
    highest_sparse: BTreeMap<u64, u64>,
    calls: u64,
}

/// The dense vector's cell for `resource`, grown to reach it.
fn dense_cell(cells: &mut Vec<u64>, resource: u64) -> &mut u64 {
    debug_assert!(resource < DENSE_RESOURCES);
    let i = resource as usize;
    if i >= cells.len() {
        // Amortised doubling by `Vec`; bounded by DENSE_RESOURCES.
        cells.resize(i + 1, 0);
    }
    &mut cells[i]
}

impl EffectService {
    pub fn new(spec: ServiceSpec) -> EffectService {
        assert!(spec.work_ms_min <= spec.work_ms_max);
        EffectService {
            spec,
            applied_dense: Vec::new(),
            applied_sparse: BTreeSet::new(),
            highest_dense: Vec::new(),
            highest_sparse: BTreeMap::new(),
            calls: 0,
        }
    }

    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Decide one call at the moment the service acts on it.
    pub fn decide(&mut self, call: &EffectRequest) -> EffectReply {
        self.calls += 1;
        if self.spec.fencing {
            let highest = if call.resource < DENSE_RESOURCES {
                dense_cell(&mut self.highest_dense, call.resource)
            } else {
                self.highest_sparse.entry(call.resource).or_insert(0)
            };
            if call.token < *highest {
                return EffectReply::RejectedStale;
            }
            *highest = call.token;
        }
        let key = match self.spec.dedup {
            Dedup::None => None,
            Dedup::ByKey if call.idempotency_key => Some((call.resource, call.step)),
            Dedup::ByKey => None,
            Dedup::ByResource => Some((call.resource, 0)),
        };
        let Some((resource, step)) = key else {
            return EffectReply::Applied;
        };
        let first = if resource < DENSE_RESOURCES && step < DENSE_STEPS {
            let bits = dense_cell(&mut self.applied_dense, resource);
            let bit = 1u64 << step;
            let first = *bits & bit == 0;
            *bits |= bit;
            first
        } else {
            self.applied_sparse.insert((resource, step))
        };
        if first {
            EffectReply::Applied
        } else {
            EffectReply::Deduplicated
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_interface::ServiceId;

    fn call(resource: u64, step: u32, token: u64, key: bool) -> EffectRequest {
        EffectRequest {
            service: ServiceId(0),
            resource,
            step,
            token,
            idempotency_key: key,
        }
    }

    fn spec(dedup: Dedup, fencing: bool) -> ServiceSpec {
        ServiceSpec {
            name: "s".into(),
            dedup,
            fencing,
            work_ms_min: 1,
            work_ms_max: 1,
        }
    }

    #[test]
    fn dedup_by_key_needs_the_key() {
        let mut s = EffectService::new(spec(Dedup::ByKey, false));
        assert_eq!(s.decide(&call(1, 0, 1, true)), EffectReply::Applied);
        assert_eq!(s.decide(&call(1, 0, 2, true)), EffectReply::Deduplicated);
        assert_eq!(s.decide(&call(1, 0, 3, false)), EffectReply::Applied);
        assert_eq!(s.decide(&call(1, 1, 3, true)), EffectReply::Applied);
    }

    #[test]
    fn fencing_rejects_lower_tokens_only() {
        let mut s = EffectService::new(spec(Dedup::None, true));
        assert_eq!(s.decide(&call(7, 0, 3, true)), EffectReply::Applied);
        assert_eq!(s.decide(&call(7, 0, 2, true)), EffectReply::RejectedStale);
        assert_eq!(s.decide(&call(7, 0, 3, true)), EffectReply::Applied);
        assert_eq!(s.decide(&call(8, 0, 1, true)), EffectReply::Applied);
    }

    #[test]
    fn dense_and_sparse_resources_decide_alike() {
        for resource in [0, 63, 4_096, DENSE_RESOURCES, u64::MAX] {
            for step in [0, DENSE_STEPS - 1, DENSE_STEPS, 1_000] {
                let mut s = EffectService::new(spec(Dedup::ByKey, true));
                assert_eq!(
                    s.decide(&call(resource, step, 5, true)),
                    EffectReply::Applied
                );
                assert_eq!(
                    s.decide(&call(resource, step, 6, true)),
                    EffectReply::Deduplicated
                );
                assert_eq!(
                    s.decide(&call(resource, step, 4, true)),
                    EffectReply::RejectedStale
                );
                assert_eq!(
                    s.decide(&call(resource, step + 1, 6, true)),
                    EffectReply::Applied
                );
            }
        }
    }
}
