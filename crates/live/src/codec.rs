//! The protocol's keys and documents as the SQL stores keep them: a key as
//! bytes in the key order (its variant's rank, then its fields big-endian,
//! as `DocKey`'s `Ord` compares them), a document as its JSON.

use leasehold_protocol::{DocKey, DocValue, Owner, TaskId};
use leasehold_store_sql::Codec;

pub struct LeaseCodec;

impl Codec<DocKey, DocValue> for LeaseCodec {
    fn key_bytes(&self, key: &DocKey) -> Vec<u8> {
        let mut out = Vec::with_capacity(13);
        let owner = |out: &mut Vec<u8>, o: Owner| {
            out.extend(o.worker.to_be_bytes());
            out.extend(o.incarnation.to_be_bytes());
        };
        match *key {
            DocKey::Member { owner: o } => {
                out.push(0);
                owner(&mut out, o);
            }
            DocKey::Task { task } => {
                out.push(1);
                out.extend(task.0.to_be_bytes());
            }
            DocKey::PendingIdx { spot, task } => {
                out.push(2);
                out.extend(spot.to_be_bytes());
                out.extend(task.0.to_be_bytes());
            }
            DocKey::OwnedIdx { owner: o, task } => {
                out.push(3);
                owner(&mut out, o);
                out.extend(task.0.to_be_bytes());
            }
            DocKey::TaskLease { task } => {
                out.push(4);
                out.extend(task.0.to_be_bytes());
            }
        }
        out
    }

    fn key_from(&self, bytes: &[u8]) -> Result<DocKey, String> {
        let word = |at: usize| -> Result<u32, String> {
            bytes
                .get(at..at + 4)
                .map(|b| u32::from_be_bytes(b.try_into().expect("four bytes")))
                .ok_or_else(|| format!("a key of {} bytes is short", bytes.len()))
        };
        let owner = |at: usize| -> Result<Owner, String> {
            Ok(Owner {
                worker: word(at)?,
                incarnation: word(at + 4)?,
            })
        };
        let (key, len) = match bytes.first() {
            Some(0) => (DocKey::Member { owner: owner(1)? }, 9),
            Some(1) => (
                DocKey::Task {
                    task: TaskId(word(1)?),
                },
                5,
            ),
            Some(2) => (
                DocKey::PendingIdx {
                    spot: word(1)?,
                    task: TaskId(word(5)?),
                },
                9,
            ),
            Some(3) => (
                DocKey::OwnedIdx {
                    owner: owner(1)?,
                    task: TaskId(word(9)?),
                },
                13,
            ),
            Some(4) => (
                DocKey::TaskLease {
                    task: TaskId(word(1)?),
                },
                5,
            ),
            other => return Err(format!("no kind of key starts with {other:?}")),
        };
        if bytes.len() != len {
            return Err(format!("a key of {} bytes, not {len}", bytes.len()));
        }
        Ok(key)
    }

    fn value_text(&self, value: &DocValue) -> String {
        serde_json::to_string(value).expect("documents serialise")
    }

    fn value_from(&self, text: &str) -> Result<DocValue, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = DocKey> {
        let id = || prop_oneof![0..3u32, (u32::MAX - 2)..=u32::MAX, any::<u32>()];
        (0..5u8, id(), id(), id()).prop_map(|(rank, worker, incarnation, task)| {
            let owner = Owner {
                worker,
                incarnation,
            };
            let task = TaskId(task);
            match rank {
                0 => DocKey::Member { owner },
                1 => DocKey::Task { task },
                2 => DocKey::PendingIdx { spot: worker, task },
                3 => DocKey::OwnedIdx { owner, task },
                _ => DocKey::TaskLease { task },
            }
        })
    }

    proptest! {
        /// The bytes order as the keys do (a SQL range is the key range),
        /// and read back as the key.
        #[test]
        fn key_bytes_keep_the_key_order(a in key(), b in key()) {
            let (x, y) = (LeaseCodec.key_bytes(&a), LeaseCodec.key_bytes(&b));
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            prop_assert_eq!(LeaseCodec.key_from(&x).unwrap(), a);
            prop_assert!(LeaseCodec.key_from(&x[..x.len() - 1]).is_err());
        }
    }
}
