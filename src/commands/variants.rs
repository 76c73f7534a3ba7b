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
        for i in Variant::catalogue() {
            println!("{:<28} {}", i.name, i.description);
            println!("{:<28} mirrors: {}", "", i.mirrors);
        }
    }
    EXIT_OK
}
