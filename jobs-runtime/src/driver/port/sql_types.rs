//! How every SQL driver reads the port's stored enums: a state or status is stored as its text
//! (`JobState::as_str`), and one this build does not know is refused with the port's own code
//! (`X_JOB_ROW_STATUS_UNKNOWN`, `X_STEP_RECORD_INVALID`), which the driver's error mapping
//! recovers from the decode failure. Generic over the database, so SQLite reads them as
//! Postgres does.

use sqlx::decode::Decode;
use sqlx::error::BoxDynError;
use sqlx::{Database, Type};

use super::records::{JobState, StepStatus};
use crate::error::StdJobError;

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
