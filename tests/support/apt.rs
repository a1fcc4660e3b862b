//! Debian packages a test needs, installed with apt-get when missing: the tests run as root,
//! and the README's test command must pass on a fresh machine that has only PostgreSQL.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Installs `packages` when any of `binaries` is missing, once `apt-get update` if the first
/// try fails; panics naming the packages when they still cannot be had.
pub fn ensure(binaries: &[&str], packages: &[&str]) {
    let present = || binaries.iter().all(|b| Path::new(b).exists());
    if present() {
        return;
    }
    // Tests of one binary ask at once: one installs while the others wait, then find the
    // binaries there (two apt-gets at once fail on dpkg's lock). Another process's apt-get is
    // waited for through dpkg's own lock timeout.
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if present() {
        return;
    }
    let install = || {
        Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=300"])
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        let _ = Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=300", "update", "-q"])
            .stdout(Stdio::null())
            .status();
        assert!(
            install(),
            "apt-get could not install {}",
            packages.join(" ")
        );
    }
    assert!(
        present(),
        "{} still missing after apt-get install {}",
        binaries.join(" or "),
        packages.join(" ")
    );
}
