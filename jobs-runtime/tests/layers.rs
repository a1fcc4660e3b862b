//! ARCHITECTURE.md checked against the runtime's source: every source file is named on the
//! map, and the layers hold.
//!
//! Every top-level module of `src/` has a layer in the list under "The runtime's modules, in
//! layers"; a module names (`use crate::..`, a `crate::..` path, a `super::..` path that leaves
//! its module, or such a path inside a macro's tokens) only modules of its own layer or below;
//! and no two top-level modules name each other through any chain. `#[cfg(test)]` items are
//! left out: a module's tests may use the whole crate. A failure names the file and the line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A reference from one top-level module to another, where it is written.
#[derive(Debug, Clone)]
struct Import {
    from: String,
    to: String,
    file: PathBuf,
    line: usize,
}

fn runtime_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layer of each module named in ARCHITECTURE.md's numbered list (1 = the lowest).
fn layers_from_map() -> BTreeMap<String, usize> {
    let map = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let text = std::fs::read_to_string(&map).expect("ARCHITECTURE.md beside the workspace");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("The runtime's modules, in layers"))
        .expect("ARCHITECTURE.md has a section \"The runtime's modules, in layers\"");
    let mut layers = BTreeMap::new();
    let mut layer = 0;
    for line in section.lines() {
        let numbered = line
            .split_once(". ")
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if let Some((n, _)) = numbered {
            layer = n.parse().unwrap();
        } else if !line.starts_with("   ") {
            // Prose between or after the items belongs to no layer.
            if layer > 0 && !line.trim().is_empty() {
                layer = 0;
            }
            continue;
        }
        if layer == 0 {
            continue;
        }
        for (i, quoted) in line.split('`').enumerate() {
            let module = quoted
                .strip_suffix(".rs")
                .or_else(|| quoted.strip_suffix('/'));
            if let Some(module) = module.filter(|_| i % 2 == 1) {
                if module.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    let earlier = layers.insert(module.to_string(), layer);
                    assert!(
                        earlier.is_none() || earlier == Some(layer),
                        "ARCHITECTURE.md puts `{module}` in two layers"
                    );
                }
            }
        }
    }
    layers
}

/// The crate's top-level modules: `src/<name>.rs` and `src/<name>/`, but `lib.rs` and `bin/`.
fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(runtime_src())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_string();
            match name.strip_suffix(".rs") {
                Some("lib") => None,
                Some(module) => Some(module.to_string()),
                None if path.is_dir() && name != "bin" => Some(name),
                None => None,
            }
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/worker/admit.rs` is `["worker", "admit"]`.
fn module_path(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(runtime_src()).unwrap();
    let mut path: Vec<String> = relative
        .iter()
        .map(|part| part.to_str().unwrap().to_string())
        .collect();
    let last = path.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap();
    if stem != "mod" {
        path.push(stem.to_string());
    }
    path
}

/// What `crate::<name>` means at the root: a module, or an item `lib.rs` re-exports from one.
fn root_names(modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(runtime_src().join("lib.rs")).unwrap();
    let file = syn::parse_file(&lib).unwrap();
    let mut names: BTreeMap<String, String> =
        modules.iter().map(|m| (m.clone(), m.clone())).collect();
    fn walk(tree: &syn::UseTree, from: Option<&str>, names: &mut BTreeMap<String, String>) {
        match tree {
            syn::UseTree::Path(p) => {
                let segment = p.ident.to_string();
                let from = match from {
                    None if segment == "crate" => None,
                    None => Some(segment.as_str()),
                    Some(from) => Some(from),
                };
                walk(&p.tree, from, names)
            }
            syn::UseTree::Name(n) => {
                if let Some(from) = from {
                    names.insert(n.ident.to_string(), from.to_string());
                }
            }
            syn::UseTree::Rename(r) => {
                if let Some(from) = from {
                    names.insert(r.rename.to_string(), from.to_string());
                }
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, from, names)),
            syn::UseTree::Glob(_) => {}
        }
    }
    for item in &file.items {
        if let syn::Item::Use(u) = item {
            let mut found = BTreeMap::new();
            walk(&u.tree, None, &mut found);
            for (name, from) in found {
                if modules.contains(&from) {
                    names.entry(name).or_insert(from);
                }
            }
        }
    }
    names
}

/// `#[cfg(test)]`, or a cfg that holds only under test (`all(test, ..)`).
fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let Ok(list) = a.meta.require_list() else {
            return false;
        };
        let words: Vec<String> = list
            .tokens
            .to_string()
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .map(str::to_string)
            .collect();
        a.path().is_ident("cfg")
            && words.iter().any(|w| w == "test")
            && !words.iter().any(|w| w == "not" || w == "any")
    })
}

/// Collects the top-level modules one file names, with their lines.
struct Collector<'a> {
    file: &'a Path,
    /// The module the visitor is in: the file's path plus any inline `mod`s.
    here: Vec<String>,
    names: &'a BTreeMap<String, String>,
    found: Vec<Import>,
}

impl Collector<'_> {
    fn record(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else {
            return;
        };
        let target: Vec<String> = match first.as_str() {
            "crate" => segments[1..].to_vec(),
            "jobs" if segments.len() > 1 => segments[1..].to_vec(),
            "super" | "self" => {
                let mut at = self.here.clone();
                let mut rest = segments;
                while let Some(step) = rest.first() {
                    match step.as_str() {
                        "super" => {
                            at.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                at.extend(rest.iter().cloned());
                at
            }
            _ => return,
        };
        let Some(module) = target.first().and_then(|name| self.names.get(name)) else {
            return;
        };
        if module != &self.here[0] {
            self.found.push(Import {
                from: self.here[0].clone(),
                to: module.clone(),
                file: self.file.to_path_buf(),
                line,
            });
        }
    }

    fn use_tree(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.record(&prefix.clone(), n.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.record(&prefix.clone(), r.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Glob(g) => {
                self.record(&prefix.clone(), g.star_token.spans[0].start().line)
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }

    /// `crate :: a :: b` (or `super :: ..`) inside a macro's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(g) = &trees[i] {
                self.tokens(g.stream());
            }
            if let TokenTree::Ident(start) = &trees[i] {
                let name = start.to_string();
                if matches!(name.as_str(), "crate" | "super") {
                    let mut segments = vec![name];
                    let mut j = i + 1;
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.record(&segments, start.span().start().line);
                    }
                    i = j;
                    continue;
                }
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if !is_cfg_test(&item.attrs) {
            self.use_tree(&item.tree, &mut Vec::new());
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        self.here.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.here.pop();
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = path.segments[0].ident.span().start().line;
        self.record(&segments, line);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

fn imports(modules: &BTreeSet<String>) -> Vec<Import> {
    let names = root_names(modules);
    let mut files = Vec::new();
    rust_files(&runtime_src(), &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let here = module_path(&file);
        if here.is_empty() || here[0] == "lib" || here[0] == "bin" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", file.display()));
        let mut collector = Collector {
            file: &file,
            here,
            names: &names,
            found: Vec::new(),
        };
        collector.visit_file(&parsed);
        found.extend(collector.found);
    }
    found
}

fn shown(import: &Import) -> String {
    let file = import
        .file
        .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or(&import.file);
    format!(
        "{}:{}: `{}` names `{}`",
        file.display(),
        import.line,
        import.from,
        import.to
    )
}

#[test]
fn every_module_has_a_layer_and_every_layer_a_module() {
    let layers = layers_from_map();
    let modules = top_level_modules();
    let unplaced: Vec<_> = modules
        .iter()
        .filter(|m| !layers.contains_key(*m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules with no layer in ARCHITECTURE.md: {unplaced:?}"
    );
    let stale: Vec<_> = layers.keys().filter(|m| !modules.contains(*m)).collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md's layers name modules src/ does not have: {stale:?}"
    );
}

#[test]
fn no_module_names_a_module_of_a_higher_layer() {
    let layers = layers_from_map();
    let modules = top_level_modules();
    let upward: Vec<String> = imports(&modules)
        .iter()
        .filter(|i| match (layers.get(&i.from), layers.get(&i.to)) {
            (Some(from), Some(to)) => to > from,
            _ => false,
        })
        .map(|i| {
            format!(
                "{} (layer {} above {})",
                shown(i),
                layers[&i.to],
                layers[&i.from]
            )
        })
        .collect();
    assert!(
        upward.is_empty(),
        "imports pointing up ARCHITECTURE.md's layer list:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_two_top_level_modules_name_each_other() {
    let modules = top_level_modules();
    let found = imports(&modules);
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for import in &found {
        edges.entry(&import.from).or_default().insert(&import.to);
    }
    // `to` reaches `from` again: every edge on a cycle, with where it is written.
    let reaches = |start: &str, goal: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(at) = stack.pop() {
            if at == goal {
                return true;
            }
            if seen.insert(at) {
                stack.extend(edges.get(at).into_iter().flatten().copied());
            }
        }
        false
    };
    let mut on_cycles: Vec<String> = Vec::new();
    let mut reported = BTreeSet::new();
    for import in &found {
        if reaches(&import.to, &import.from) && reported.insert((&import.from, &import.to)) {
            on_cycles.push(shown(import));
        }
    }
    assert!(
        on_cycles.is_empty(),
        "top-level modules that name each other (one line per edge on a cycle):\n{}",
        on_cycles.join("\n")
    );
}

#[test]
fn the_checker_sees_the_imports_it_must() {
    // A guard on the checker itself: known downward imports are found, with their lines.
    let modules = top_level_modules();
    let found = imports(&modules);
    assert!(found
        .iter()
        .any(|i| i.from == "worker" && i.to == "run" && i.line > 0));
    assert!(found.iter().any(|i| i.from == "client" && i.to == "driver"));
    let layers = layers_from_map();
    assert!(layers["error"] < layers["client"]);
}

/// The paths ARCHITECTURE.md names in backticks, with brace groups expanded
/// (`driver/{memory,postgres}/claim.rs` names both), relative to the runtime's `src/`.
fn paths_on_the_map() -> BTreeSet<String> {
    let map = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    // A code span may break across lines in the prose; fold them back first.
    let text = std::fs::read_to_string(&map).unwrap().replace(",\n", ",");
    fn expand(span: &str) -> Vec<String> {
        let Some(open) = span.find('{') else {
            return vec![span.to_string()];
        };
        let Some(close) = span[open..].find('}').map(|c| open + c) else {
            return vec![span.to_string()];
        };
        span[open + 1..close]
            .split(',')
            .flat_map(|part| {
                expand(&format!(
                    "{}{}{}",
                    &span[..open],
                    part.trim(),
                    &span[close + 1..]
                ))
            })
            .collect()
    }
    let spans = text.split('`').skip(1).step_by(2).flat_map(expand);
    // The job's path is a code block: its file names stand bare, among words and parentheses.
    let bare = text
        .split(|c: char| c.is_whitespace() || "(),:;`".contains(c))
        .filter(|word| word.ends_with(".rs"))
        .map(str::to_string);
    spans.chain(bare).collect()
}

#[test]
fn every_source_file_is_on_the_map() {
    let named = paths_on_the_map();
    let mut files = Vec::new();
    rust_files(&runtime_src(), &mut files);
    let missing: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(runtime_src())
                .unwrap()
                .to_str()
                .unwrap()
                .to_string()
        })
        .filter(|path| !path.ends_with("mod.rs") && path != "lib.rs")
        .filter(|path| {
            // Named by its whole path, by a path's tail, or by its bare name in the sentence
            // that describes its folder (`floors.rs` where the Postgres driver is described).
            let name = path.rsplit('/').next().unwrap();
            !named
                .iter()
                .any(|n| n == path || n == name || path.ends_with(&format!("/{n}")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "source files ARCHITECTURE.md does not name (add each where its module is described):\n{}",
        missing.join("\n")
    );
}
