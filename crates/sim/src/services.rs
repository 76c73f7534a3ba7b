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

pub struct EffectService {
    pub spec: ServiceSpec,
    applied: BTreeSet<(u64, u32)>,
    highest_token: BTreeMap<u64, u64>,
    calls: u64,
}

impl EffectService {
    pub fn new(spec: ServiceSpec) -> EffectService {
        assert!(spec.work_ms_min <= spec.work_ms_max);
        EffectService {
            spec,
            applied: BTreeSet::new(),
            highest_token: BTreeMap::new(),
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
            let highest = self.highest_token.entry(call.resource).or_insert(0);
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
        match key {
            Some(key) if !self.applied.insert(key) => EffectReply::Deduplicated,
            _ => EffectReply::Applied,
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
}
