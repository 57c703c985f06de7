//! The published TypeScript declarations and the README agree with the Rust error families: every
//! code of each family, and no other, is in its union in the built `.d.ts`, and in the README's
//! error tables. Runs natively after the package is built (`npm test` builds it first).
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agent_sessions::core::error::{ErrorFamily, RunnerErrorCode, SessionErrorCode};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); build the package first with `node scripts/build.mjs` \
             (npm test does)",
            path.display()
        )
    })
}

fn codes<C: ErrorFamily>() -> BTreeSet<String> {
    C::ALL.iter().map(|c| c.as_str().to_string()).collect()
}

/// The string literals of `export type <name> = | 'A' | 'B';` in a declaration file.
fn union(dts: &str, name: &str) -> BTreeSet<String> {
    let start = dts
        .find(&format!("export type {name} ="))
        .unwrap_or_else(|| panic!("no `export type {name}` in the declarations"));
    let body = &dts[start..];
    let body = &body[..body.find(';').expect("the union ends with ';'")];
    body.split('|')
        .skip(1)
        .map(|member| member.trim().trim_matches('\'').to_string())
        .collect()
}

#[test]
fn each_published_union_lists_exactly_the_codes_of_its_family() {
    let pkg = root().join("pkg");
    let sessions = read(&pkg.join("agent_sessions.d.ts"));
    let runner = read(&pkg.join("agent_sessions_runner.d.ts"));
    assert_eq!(
        union(&sessions, "SessionErrorCode"),
        codes::<SessionErrorCode>()
    );
    assert_eq!(
        union(&runner, "RunnerErrorCode"),
        codes::<RunnerErrorCode>()
    );
    for (file, family) in [(&sessions, "SessionError"), (&runner, "RunnerError")] {
        assert!(
            file.contains(&format!("name: '{family}';")),
            "{family} is declared with its name"
        );
    }
}

#[test]
fn the_readme_documents_every_code() {
    let readme = read(&root().join("README.md"));
    for code in codes::<SessionErrorCode>() {
        assert!(
            readme.contains(&format!("| `{code}` |")),
            "README's SessionError table has no row for {code}"
        );
    }
    for code in codes::<RunnerErrorCode>() {
        assert!(
            readme.contains(&format!("`{code}`")),
            "README does not mention RunnerError code {code}"
        );
    }
}
