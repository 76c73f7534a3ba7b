//! The vocabulary shared by a sans-IO node and whatever hosts it.
//!
//! A node (the lease protocol's worker or reclaimer) never performs IO: it
//! receives an [`Input`] together with the time on its own local clock, and
//! answers with [`Output`]s: store requests, effect calls and events. The
//! simulator hosts nodes, and so does `leasehold live` over a real store
//! (`crates/store-sql`). Nothing here knows about leases.

pub mod effect;
pub mod fixed_bytes;
pub mod node;
pub mod store;
pub mod time;

pub use effect::{EffectReply, EffectRequest, ServiceId};
pub use fixed_bytes::FixedBytes;
pub use node::{Input, Output, RequestId};
pub use store::{Document, KeyClasses, StoreReply, StoreRequest, Version};
pub use time::{Instant, LocalTime};
