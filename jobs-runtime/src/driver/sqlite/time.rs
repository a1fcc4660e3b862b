//! Timestamps as the SQLite schema stores them: TEXT of one fixed width,
//! `YYYY-MM-DDTHH:MM:SS.ffffffZ` (microseconds, UTC), so that text order is time order and a
//! statement compares instants with `<=`. sqlx's own encoding of a `DateTime` drops trailing
//! zero digits (`...:05Z` beside `...:05.120Z`), which breaks that order, so every timestamp is
//! bound through [`Ts`]. Reading back goes through sqlx's RFC 3339 decoding, which reads this form.

use sqlx::encode::{Encode, IsNull};
use sqlx::error::BoxDynError;
use sqlx::sqlite::{Sqlite, SqliteArgumentsBuffer, SqliteTypeInfo};
use sqlx::Type;

use crate::clock::Timestamp;

/// The stored form of a timestamp.
pub(crate) fn format(at: Timestamp) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// A timestamp bound in the stored form; `None` binds NULL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ts(pub Option<Timestamp>);

impl From<Timestamp> for Ts {
    fn from(at: Timestamp) -> Self {
        Ts(Some(at))
    }
}

impl From<Option<Timestamp>> for Ts {
    fn from(at: Option<Timestamp>) -> Self {
        Ts(at)
    }
}

impl Type<Sqlite> for Ts {
    fn type_info() -> SqliteTypeInfo {
        <String as Type<Sqlite>>::type_info()
    }
}

impl Encode<'_, Sqlite> for Ts {
    fn encode_by_ref(&self, buf: &mut SqliteArgumentsBuffer) -> Result<IsNull, BoxDynError> {
        match self.0 {
            Some(at) => <String as Encode<Sqlite>>::encode(format(at), buf),
            None => Ok(IsNull::Yes),
        }
    }
}

/// Binds `at` in the stored form.
pub(crate) fn ts(at: impl Into<Ts>) -> Ts {
    at.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    #[test]
    fn the_stored_form_has_one_width_so_text_order_is_time_order() {
        let whole: DateTime<Utc> = "2030-01-01T00:00:05Z".parse().unwrap();
        let later: DateTime<Utc> = "2030-01-01T00:00:05.120Z".parse().unwrap();
        assert_eq!(format(whole), "2030-01-01T00:00:05.000000Z");
        assert_eq!(format(later), "2030-01-01T00:00:05.120000Z");
        assert!(format(whole) < format(later));
    }
}
