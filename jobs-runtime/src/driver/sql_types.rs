//! How every SQL driver reads the port's stored enums and waits: a state or status is stored as its text
//! (`JobState::as_str`), and one this build does not know is refused with the port's own code
//! (`X_JOB_ROW_STATUS_UNKNOWN`, `X_STEP_RECORD_INVALID`), which the driver's error mapping
//! recovers from the decode failure. Generic over the database, so SQLite reads them as
//! Postgres does.

use sqlx::decode::Decode;
use sqlx::error::BoxDynError;
use sqlx::{Database, Type};

use super::records::{JobState, StepStatus, WaitSpec};
use crate::error::{redact_serde, ErrorCode, JobError, StdJobError};

macro_rules! stored_as_text {
    ($ty:ty) => {
        impl<DB: Database> Type<DB> for $ty
        where
            String: Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <String as Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <String as Type<DB>>::compatible(ty)
            }
        }

        impl<'r, DB: Database> Decode<'r, DB> for $ty
        where
            String: Decode<'r, DB>,
        {
            fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
                let stored = <String as Decode<'r, DB>>::decode(value)?;
                <$ty>::parse(&stored).map_err(|e| Box::new(StdJobError(e)) as BoxDynError)
            }
        }
    };
}

stored_as_text!(JobState);
stored_as_text!(StepStatus);

/// An open wait is stored as JSON; one that does not parse is `X_STEP_RECORD_INVALID`, with the
/// shape of the problem and never the stored value.
impl<DB: Database> Type<DB> for WaitSpec
where
    serde_json::Value: Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <serde_json::Value as Type<DB>>::type_info()
    }

    fn compatible(ty: &DB::TypeInfo) -> bool {
        <serde_json::Value as Type<DB>>::compatible(ty)
    }
}

impl<'r, DB: Database> Decode<'r, DB> for WaitSpec
where
    serde_json::Value: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Self, BoxDynError> {
        let stored = <serde_json::Value as Decode<'r, DB>>::decode(value)?;
        serde_json::from_value(stored).map_err(|e| {
            let refused = JobError::new(
                ErrorCode::StepRecordInvalid,
                format!("a stored wait does not parse: {}", redact_serde(&e)),
            );
            Box::new(StdJobError(refused)) as BoxDynError
        })
    }
}
