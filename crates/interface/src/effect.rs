//! Calls to external effect services (charge a card, notify a kitchen).
//!
//! The vocabulary is Kleppmann's: a call concerns a `resource`, is one `step`
//! of work on it, and carries a fencing `token`. A service may deduplicate on
//! (resource, step) or on resource alone, and may reject a token lower than one
//! it has already seen for the resource.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ServiceId(pub u16);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EffectRequest {
    pub service: ServiceId,
    pub resource: u64,
    pub step: u32,
    pub token: u64,
    /// Whether the caller sent an idempotency key. Correct callers always do;
    /// a planted bug may not, and then the service cannot deduplicate.
    pub idempotency_key: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectReply {
    /// The effect happened now.
    Applied,
    /// The effect had already happened for this key; nothing was done again.
    Deduplicated,
    /// The token is lower than one the service has seen for this resource.
    RejectedStale,
    /// The service failed the call; nothing was done.
    Failed,
}
