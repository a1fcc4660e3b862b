//! [`JobDriver::store_check`]: what `jobs verify` reads of a store. A migrated store lacks no
//! migration, and the check names the settings it read; it writes nothing.

use std::sync::Arc;

use super::*;

/// The factory's store is migrated: no migration is pending, and the settings are named.
pub async fn store_check_finds_no_pending_migration_once_migrated(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let check = d
        .store_check()
        .await
        .unwrap_or_else(|e| panic!("the `{}` driver cannot check its store: {e}", d.name()));
    assert!(
        check.pending_migrations.is_empty(),
        "pending on a migrated store: {:?}",
        check.pending_migrations
    );
    assert!(!check.settings.is_empty(), "no setting was read");
    // A read only: asked again, the same answer.
    assert_eq!(d.store_check().await.unwrap(), check);
}
