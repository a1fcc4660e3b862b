// `#[input]` takes no arguments but `crate`: serde and schemars attributes go on the type.
use jobs::prelude::*;

#[input(rename_all = "camelCase")]
pub struct Welcome {
    pub user_id: u64,
}

fn main() {}
