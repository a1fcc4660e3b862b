// The prelude's derives go through the serde and schemars `jobs` depends on (no `serde` or
// `schemars` path is named here): structs, tuple and unit structs, enums and generics, with
// serde attributes, round-trip and name their schema after the type.
#![deny(warnings)]
use jobs::prelude::*;

/// A welcome mail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Welcome {
    /// Whom to greet.
    pub user_id: u64,
    #[serde(default)]
    pub org_name: Option<String>,
    private_note: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cents(pub i64);

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ping;

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
pub enum Plan {
    Free,
    Paid { seats: u32 },
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
}

#[job(key = "welcome:{user_id}", tenant = none)]
async fn send_welcome(_run: Run, _input: Welcome) -> Result<(), JobError> {
    Ok(())
}

fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(
    value: T,
    json: &str,
) {
    let text = jobs::__private::serde_json::to_string(&value).unwrap();
    assert_eq!(text, json);
    let back: T = jobs::__private::serde_json::from_str(&text).unwrap();
    assert_eq!(back, value);
}

/// The same types with serde's and schemars' own derives, to compare against.
mod own {
    #![allow(dead_code)]
    /// A welcome mail.
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Welcome {
        /// Whom to greet.
        pub user_id: u64,
        #[serde(default)]
        pub org_name: Option<String>,
        private_note: String,
    }

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    #[serde(tag = "kind")]
    pub enum Plan {
        Free,
        Paid { seats: u32 },
    }

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Page<T> {
        pub items: Vec<T>,
    }
}

fn same_schema<A: JsonSchema, B: JsonSchema>() {
    let ours = jobs::__private::input_schema::<A>();
    let theirs = jobs::__private::input_schema::<B>();
    assert_eq!(ours, theirs);
    assert_eq!(A::schema_name(), B::schema_name());
}

#[test]
fn runs() {
    same_schema::<Welcome, own::Welcome>();
    same_schema::<Plan, own::Plan>();
    same_schema::<Page<Plan>, own::Page<own::Plan>>();

    round_trip(
        Welcome {
            user_id: 7,
            org_name: None,
            private_note: "n".into(),
        },
        r#"{"userId":7,"orgName":null,"privateNote":"n"}"#,
    );
    round_trip(Cents(5), "5");
    round_trip(Ping, "null");
    round_trip(Plan::Paid { seats: 3 }, r#"{"kind":"Paid","seats":3}"#);
    round_trip(
        Page {
            items: vec![Cents(1)],
        },
        r#"{"items":[1]}"#,
    );

    let schema = jobs::__private::input_schema::<Welcome>();
    assert_eq!(schema["title"], "Welcome", "{schema}");
    assert_eq!(
        schema["properties"]["userId"]["description"], "Whom to greet.",
        "{schema}"
    );
    let _ = SendWelcome::descriptor();
}
