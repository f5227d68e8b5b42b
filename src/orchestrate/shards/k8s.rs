//! `--client-hosts k8s:N[,image=IMAGE]`: the shards of a step as a
//! Kubernetes Indexed Job. Its manifest (JSON, which kubectl reads as it
//! reads YAML) goes into the results directory; with `kubectl` on `PATH`
//! it is applied, otherwise the user applies it. Pod `i` runs shard
//! `JOB_COMPLETION_INDEX`; the store URL and the target's password come
//! from the Secret `tidemark-shard` (keys `store` and `password`), which
//! the user creates, never from the manifest.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use serde_json::json;

/// The Secret the pods read the store URL and password from.
pub const SECRET: &str = "tidemark-shard";

/// The Job's name for sharded step `id`.
pub fn job_name(id: i64) -> String {
    format!("tidemark-shards-{id}")
}

/// The Indexed Job running `shards` pods of `image` for sharded step `id`.
pub fn manifest(image: &str, id: i64, shards: u32) -> serde_json::Value {
    let labels =
        json!({ "app.kubernetes.io/name": "tidemark", "tidemark/shard-step": id.to_string() });
    let secret = |key: &str, optional: bool| json!({ "secretKeyRef": { "name": SECRET, "key": key, "optional": optional } });
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": job_name(id), "labels": labels },
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "shard",
                        "image": image,
                        "command": [
                            "sh", "-c",
                            format!("exec tidemark shard --step {id} --shard \"$JOB_COMPLETION_INDEX\"")
                        ],
                        "env": [
                            { "name": "TIDEMARK_STORE", "valueFrom": secret("store", false) },
                            { "name": super::PASSWORD_ENV, "valueFrom": secret("password", true) }
                        ]
                    }]
                }
            }
        }
    })
}

/// Writes the Job of step `id` into `dir` and applies it when kubectl is
/// there; returns the file and whether it was applied.
pub fn launch(dir: &Path, image: &str, id: i64, shards: u32) -> anyhow::Result<(PathBuf, bool)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = dir.join(format!("{}.json", job_name(id)));
    let text = serde_json::to_string_pretty(&manifest(image, id, shards))?;
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    let applied = has_kubectl()
        && Command::new("kubectl")
            .arg("apply")
            .arg("-f")
            .arg(&file)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    Ok((file, applied))
}

/// Deletes the Job of step `id` (its pods with it) when kubectl is there.
pub fn delete(id: i64) {
    if has_kubectl() {
        let _ = Command::new("kubectl")
            .args([
                "delete",
                "job",
                &job_name(id),
                "--wait=false",
                "--ignore-not-found",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn has_kubectl() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("kubectl").is_file()))
}
