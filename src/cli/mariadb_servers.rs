//! The MariaDB and MySQL part of `tidemark servers …`: installed versions,
//! what the packages offer, and installing one ahead of a run.

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

/// Prints the installed MySQL versions and their cache.
pub fn list_mysql() -> anyhow::Result<()> {
    use crate::server::mysql::oracle;
    println!();
    let installed = oracle::list_installed()?;
    print!(
        "{}",
        install::format_installed_as(&installed, crate::server::mysql::Flavor::Mysql)
    );
    println!("cache: {}", oracle::mysql_cache().display());
    Ok(())
}

/// Installs `spec` (`mysql@5.7`) unless the cache has it.
pub fn install_mysql(spec: &str) -> anyhow::Result<()> {
    use crate::server::mysql::oracle;
    let number = spec.strip_prefix("mysql@").unwrap_or(spec);
    let req = VersionReq::parse(number).ok_or_else(|| {
        anyhow::anyhow!("'{spec}' is not a MySQL version: write it like mysql@5.7 or mysql@8.0.12")
    })?;
    if let Some(found) = oracle::find_installed(&req)? {
        println!(
            "MySQL {} is installed already in {} ({} {})",
            found.manifest.version,
            found.dir.display(),
            found.manifest.client,
            found.manifest.package
        );
        return Ok(());
    }
    oracle::install(&req, &mut |line| println!("{line}"))?;
    Ok(())
}

/// Prints the MySQL releases tidemark installs and the packages that carry
/// them.
pub fn available_mysql() {
    print!("{}", crate::server::mysql::oracle::format_offers());
}
