//! The job page's workflow graph: the jobs a job depends on and the jobs depending on it, the
//! parent that invoked it and the children it invoked, a few steps each way, as the geometry of
//! an SVG the template draws (dependencies and parents to the left, dependents and children to
//! the right, an arrow from each to the next). Read through the client's `links` and `job`, so
//! a scoped client's graph stops at its tenant's jobs.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::driver::{JobId, JobState};
use crate::error::JobError;
use crate::Jobs;

/// Jobs the graph shows at most (the nearest first).
pub(crate) const MAX_NODES: usize = 40;
/// Steps it follows each way at most.
const MAX_DEPTH: i32 = 3;
const COLUMN: i32 = 200;
const ROW: i32 = 44;
const BOX_WIDTH: i32 = 170;
const BOX_HEIGHT: i32 = 30;

/// One job in the graph.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Node {
    pub id: JobId,
    pub name: String,
    /// Its state (`gone`: removed by retention).
    pub state: String,
    /// The job the page shows.
    pub current: bool,
    pub x: i32,
    pub y: i32,
}

/// An arrow from a dependency to its dependent, box edge to box edge.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Edge {
    pub x1: i32,
    pub y1: i32,
    pub x2: i32,
    pub y2: i32,
}

/// The graph: its size, its jobs and its arrows; `truncated` when jobs were left out.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Graph {
    pub width: i32,
    pub height: i32,
    pub box_width: i32,
    pub box_height: i32,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub truncated: bool,
}

/// The graph around `id`, or `None` when it has no links.
pub(crate) async fn around(jobs: &Jobs, id: JobId) -> Result<Option<Graph>, JobError> {
    // Each job's column (negative: dependencies), found breadth first from the job.
    let mut column: BTreeMap<JobId, i32> = BTreeMap::from([(id, 0)]);
    let mut edges: Vec<(JobId, JobId)> = Vec::new();
    let mut queue: VecDeque<(JobId, i32)> = VecDeque::from([(id, 0)]);
    let mut truncated = false;
    while let Some((at, depth)) = queue.pop_front() {
        let links = jobs.links(at).await?;
        // A job's dependencies and the parent that invoked it come before it; its dependents
        // and the children it invoked after.
        let before = links.depends_on.iter().map(|(d, _)| (*d, -1));
        let before = before.chain(links.parent.map(|p| (p, -1)));
        let after = links.dependents.iter().map(|d| (*d, 1));
        let after = after.chain(links.children.iter().map(|(c, _)| (*c, 1)));
        for (other, step) in before.chain(after) {
            // Only away from the job: a dependency's other dependents are not this workflow.
            if depth != 0 && depth.signum() != step {
                continue;
            }
            let (from, to) = if step < 0 { (other, at) } else { (at, other) };
            if !column.contains_key(&other) {
                if column.len() >= MAX_NODES || depth.abs() >= MAX_DEPTH {
                    truncated = true;
                    continue;
                }
                column.insert(other, depth + step);
                queue.push_back((other, depth + step));
            }
            if !edges.contains(&(from, to)) {
                edges.push((from, to));
            }
        }
    }
    if column.len() == 1 {
        return Ok(None);
    }
    let first = column.values().min().copied().unwrap_or(0);
    let mut rows: BTreeMap<i32, i32> = BTreeMap::new();
    let mut nodes = Vec::with_capacity(column.len());
    let mut position = BTreeMap::new();
    for (job, col) in &column {
        let row = rows.entry(*col).or_insert(0);
        let (x, y) = ((col - first) * COLUMN + 10, *row * ROW + 10);
        *row += 1;
        position.insert(*job, (x, y));
        let (name, state) = match jobs.job(*job).await? {
            Some(row) => (row.name, shown_state(row.state, row.run_at)),
            None => (String::from("(gone)"), String::from("gone")),
        };
        nodes.push(Node {
            id: *job,
            name: shortened(&name),
            state,
            current: *job == id,
            x,
            y,
        });
    }
    let edges = edges
        .iter()
        .filter_map(|(from, to)| {
            let (a, b) = (position.get(from)?, position.get(to)?);
            Some(Edge {
                x1: a.0 + BOX_WIDTH,
                y1: a.1 + BOX_HEIGHT / 2,
                x2: b.0,
                y2: b.1 + BOX_HEIGHT / 2,
            })
        })
        .collect();
    let columns = column.values().max().copied().unwrap_or(0) - first + 1;
    let tallest = rows.values().max().copied().unwrap_or(1);
    Ok(Some(Graph {
        width: columns * COLUMN + 20,
        height: tallest * ROW + 20,
        box_width: BOX_WIDTH,
        box_height: BOX_HEIGHT,
        nodes,
        edges,
        truncated,
    }))
}

/// A name short enough for its box (26 characters, the last an ellipsis when cut).
fn shortened(name: &str) -> String {
    if name.chars().count() <= 26 {
        return name.to_string();
    }
    let mut short: String = name.chars().take(25).collect();
    short.push('…');
    short
}

/// A state as the graph labels it: a blocked dependent reads `blocked`.
fn shown_state(state: JobState, run_at: crate::clock::Timestamp) -> String {
    if crate::driver::is_blocked(state, run_at) {
        String::from("blocked")
    } else {
        state.as_str().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{Dependencies, DependencyFailure, EnqueueRequest, JobDriver};

    fn request(key: &str, on: &[JobId]) -> EnqueueRequest {
        let id = uuid::Uuid::now_v7();
        let now = chrono::Utc::now();
        EnqueueRequest {
            id,
            run_id: id,
            name: format!("graph.{key}"),
            queue: "default".into(),
            input: serde_json::json!({}),
            idempotency_key: key.into(),
            tenant_id: None,
            max_attempts: 3,
            run_at: now,
            priority: 0,
            on_conflict: crate::driver::ConflictPolicy::Dedupe,
            traceparent: None,
            actor: None,
            unique_for: None,
            dependencies: (!on.is_empty()).then(|| Dependencies {
                on: on.to_vec(),
                on_failure: DependencyFailure::Cancel,
            }),
            now,
        }
    }

    #[tokio::test]
    async fn a_diamond_draws_in_three_columns_with_four_arrows() {
        let driver = crate::driver::MemoryDriver::new();
        let mut ids = BTreeMap::new();
        for (key, on) in [
            ("a", vec![]),
            ("b", vec!["a"]),
            ("c", vec!["a"]),
            ("d", vec!["b", "c"]),
        ] {
            let on: Vec<JobId> = on.iter().map(|k| ids[*k]).collect();
            let id = driver.job_enqueue(&request(key, &on)).await.unwrap().id;
            ids.insert(key, id);
        }
        let jobs = Jobs::new(driver);
        let graph = around(&jobs, ids["b"]).await.unwrap().expect("links");
        // From b: a before it, d after it; c is a's other dependent, not b's workflow.
        let names: Vec<&str> = graph.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(graph.nodes.len(), 3, "{names:?}");
        assert_eq!(graph.edges.len(), 2);
        let graph = around(&jobs, ids["a"]).await.unwrap().expect("links");
        assert_eq!(graph.nodes.len(), 4);
        assert_eq!(graph.edges.len(), 4);
        let d = graph.nodes.iter().find(|n| n.id == ids["d"]).unwrap();
        assert_eq!(d.state, "blocked");
        assert_eq!(d.x, 2 * COLUMN + 10, "two steps to the right");
        assert!(graph.nodes.iter().any(|n| n.current && n.id == ids["a"]));
        let lone = driver_job(&jobs).await;
        assert!(around(&jobs, lone).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_parent_draws_before_the_children_it_invoked() {
        let driver = crate::driver::MemoryDriver::new();
        let parent = driver
            .job_enqueue(&request("parent", &[]))
            .await
            .unwrap()
            .id;
        let mut children = Vec::new();
        for key in ["c1", "c2"] {
            children.push(driver.job_enqueue(&request(key, &[])).await.unwrap().id);
        }
        driver
            .job_group_join(&crate::driver::GroupJoinParams {
                group: uuid::Uuid::now_v7(),
                waiter: parent,
                parent: Some(parent),
                members: &children,
                need: crate::driver::GroupNeed::Count(2),
                now: chrono::Utc::now(),
            })
            .await
            .unwrap();
        let jobs = Jobs::new(driver);
        let graph = around(&jobs, children[0]).await.unwrap().expect("links");
        // From a child: its parent before it; the parent's other child is not on its path.
        assert_eq!(graph.nodes.len(), 2);
        let graph = around(&jobs, parent).await.unwrap().expect("links");
        assert_eq!((graph.nodes.len(), graph.edges.len()), (3, 2));
        for child in &children {
            let node = graph.nodes.iter().find(|n| n.id == *child).unwrap();
            assert_eq!(node.x, COLUMN + 10, "one step to the right");
        }
    }

    async fn driver_job(jobs: &Jobs) -> JobId {
        jobs.driver()
            .job_enqueue(&request("lone", &[]))
            .await
            .unwrap()
            .id
    }
}
