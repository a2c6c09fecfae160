//! Import cycles: the strongly connected components of the module graph
//! (Tarjan's algorithm), each with one example cycle through it.

use std::collections::{BTreeMap, VecDeque};

/// A set of files that all reach each other.
#[derive(Debug)]
pub struct Cycle {
    /// The files of the component, in file order.
    pub files: Vec<usize>,
    /// One cycle through it: `(from, to)` edges, the last returning to the first.
    pub example: Vec<(usize, usize)>,
}

/// Every strongly connected component of more than one file.
pub fn find(edges: &[BTreeMap<usize, String>]) -> Vec<Cycle> {
    let mut tarjan = Tarjan {
        edges,
        index: vec![None; edges.len()],
        low: vec![0; edges.len()],
        on_stack: vec![false; edges.len()],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for node in 0..edges.len() {
        if tarjan.index[node].is_none() {
            tarjan.visit(node);
        }
    }
    let mut cycles: Vec<Cycle> = tarjan
        .components
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|mut files| {
            files.sort();
            let example = shortest_cycle(edges, &files);
            Cycle { files, example }
        })
        .collect();
    cycles.sort_by_key(|c| c.files[0]);
    cycles
}

struct Tarjan<'a> {
    edges: &'a [BTreeMap<usize, String>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, node: usize) {
        self.index[node] = Some(self.next);
        self.low[node] = self.next;
        self.next += 1;
        self.stack.push(node);
        self.on_stack[node] = true;
        for &to in self.edges[node].keys() {
            match self.index[to] {
                None => {
                    self.visit(to);
                    self.low[node] = self.low[node].min(self.low[to]);
                }
                Some(index) if self.on_stack[to] => self.low[node] = self.low[node].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[node]) == self.index[node] {
            let mut component = Vec::new();
            while let Some(top) = self.stack.pop() {
                self.on_stack[top] = false;
                component.push(top);
                if top == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// The shortest cycle through the component's first file (breadth-first
/// search inside the component).
fn shortest_cycle(edges: &[BTreeMap<usize, String>], component: &[usize]) -> Vec<(usize, usize)> {
    let start = component[0];
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &to in edges[node].keys() {
            if to == start {
                let mut path = vec![(node, start)];
                let mut at = node;
                while at != start {
                    let from = parent[&at];
                    path.push((from, at));
                    at = from;
                }
                path.reverse();
                return path;
            }
            if component.binary_search(&to).is_ok() && !parent.contains_key(&to) {
                parent.insert(to, node);
                queue.push_back(to);
            }
        }
    }
    unreachable!("a strongly connected component has a cycle through each file")
}
