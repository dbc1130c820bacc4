#![allow(clippy::expect_used)] // A build script reports a failure by panicking.
//! Lists the web client's files (`src/http/web/`) for `http::web`, which compiles them into the
//! binary: the server serves the client with no files beside it and no build step of its own.

use std::io::Write;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new("src/http/web");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(root, root, &mut files);
    files.sort();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut table = std::fs::File::create(out.join("web_files.rs")).expect("OUT_DIR is writable");
    writeln!(table, "&[").expect("write");
    for (name, path) in files {
        writeln!(table, "    ({name:?}, include_bytes!({path:?}) as &[u8]),").expect("write");
    }
    writeln!(table, "]").expect("write");
}

/// Every file under `dir` (named by its path below `root`, with `/`), skipping hidden ones.
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(relative) = path.strip_prefix(root) {
            let relative: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let absolute = std::fs::canonicalize(&path).expect("a listed file exists");
            files.push((relative.join("/"), absolute.to_string_lossy().into_owned()));
        }
    }
}
