//! `leasehold variants`: the protocol variants and the bug each plants.

use super::EXIT_OK;
use leasehold_protocol::Variant;

pub fn variants(json: bool) -> u8 {
    if json {
        let list: Vec<serde_json::Value> = Variant::catalogue()
            .iter()
            .map(|i| serde_json::json!({"variant": i.name, "description": i.description, "mirrors": i.mirrors}))
            .collect();
        println!("{}", serde_json::json!({ "variants": list }));
    } else {
        // The widest name sets the column, whatever names are added.
        let width = Variant::catalogue()
            .iter()
            .map(|i| i.name.len())
            .max()
            .unwrap_or(0);
        for i in Variant::catalogue() {
            println!("{:<width$} {}", i.name, i.description);
            println!("{:<width$} mirrors: {}", "", i.mirrors);
        }
    }
    EXIT_OK
}
