//! The MariaDB half of `tidemark servers …`: installed versions, what Maven
//! offers, and installing one ahead of a run.

use crate::server::mysql::install;
use crate::server::postgres::install::VersionReq;

/// Prints the installed MariaDB versions and their cache.
pub fn list() -> anyhow::Result<()> {
    println!();
    print!("{}", install::format_installed(&install::list_installed()?));
    println!("cache: {}", install::mariadb_cache().display());
    Ok(())
}

/// Installs `spec` (`mariadb@10.2`) unless the cache has it.
pub fn install(spec: &str) -> anyhow::Result<()> {
    let number = spec.strip_prefix("mariadb@").unwrap_or(spec);
    let req = VersionReq::parse(number).ok_or_else(|| {
        anyhow::anyhow!(
            "'{spec}' is not a MariaDB version: write it like mariadb@10.2 or mariadb@11.4.5"
        )
    })?;
    if let Some(found) = install::find_installed(&req)? {
        println!(
            "MariaDB {} is installed already in {} ({} {})",
            found.manifest.version,
            found.dir.display(),
            found.manifest.client,
            found.manifest.package
        );
        return Ok(());
    }
    install::install(&req, &mut |line| println!("{line}"))?;
    Ok(())
}

/// Prints the MariaDB releases Maven offers (or why it cannot say).
pub fn available() {
    if !crate::server::postgres::install::on_path("mvn") {
        return;
    }
    match install::offers() {
        Ok(list) => println!("mvn mariadb: {}", list.join(" ")),
        Err(e) => println!("mvn mariadb: {}", format!("{e:#}").replace('\n', " ")),
    }
}
