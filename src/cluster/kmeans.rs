//! Seeded k-means (k-means++ initialisation, several restarts) through linfa-clustering.
//!
//! [`kmeans_assign`] runs `KMeans::params_with_rng` with a `Xoshiro256Plus` seeded from
//! the user's seed (the generator linfa itself uses), [`KMEANS_RESTARTS`] restarts, and
//! keeps the run of lowest inertia. Labels are then taken from the best centroids (linfa's
//! own `cluster_count` describes the last run, not the best one), any empty cluster is
//! refilled with the point farthest from its centroid (taken from a cluster of two or
//! more), and clusters are renumbered in order of their first member, so that the result
//! depends only on the embeddings, `m` and the seed.

use linfa::DatasetBase;
use linfa::traits::{Fit, Predict};
use linfa_clustering::KMeans;
use ndarray::Array2;
use rand_xoshiro::Xoshiro256Plus;
use rand_xoshiro::rand_core::SeedableRng;

use super::ClusterError;

/// Number of k-means restarts (each with its own k-means++ initialisation).
pub const KMEANS_RESTARTS: usize = 16;

/// Convergence tolerance on the centroids' movement.
const TOLERANCE: f64 = 1e-6;

/// Iteration cap per restart.
const MAX_ITERATIONS: u64 = 500;

/// Cluster `vectors` (all of one length, finite) into exactly `m` non-empty clusters.
///
/// Returns the cluster of each vector, numbered `0..m` in order of each cluster's first
/// member. Reproducible for a given `seed`. Fails when `m` is 0 or larger than the
/// number of vectors, or when the vectors are empty or ragged.
pub fn kmeans_assign(
    vectors: &[Vec<f32>],
    m: usize,
    seed: u64,
) -> Result<Vec<usize>, ClusterError> {
    let n = vectors.len();
    if m == 0 || m > n {
        return Err(ClusterError::BadGroupCount {
            strategy: "clustered",
            m,
            n,
        });
    }
    let dim = vectors[0].len();
    let kmeans_err = |message: String| ClusterError::KMeans { m, n, message };
    if dim == 0 || vectors.iter().any(|v| v.len() != dim) {
        return Err(kmeans_err(
            "the embeddings are empty or of unequal lengths".into(),
        ));
    }
    let flat: Vec<f64> = vectors
        .iter()
        .flat_map(|v| v.iter().map(|&x| x as f64))
        .collect();
    if flat.iter().any(|x| !x.is_finite()) {
        return Err(kmeans_err("the embeddings hold NaN or infinity".into()));
    }
    let records = Array2::from_shape_vec((n, dim), flat).map_err(|e| kmeans_err(e.to_string()))?;
    let dataset = DatasetBase::from(records.clone());
    let model = KMeans::params_with_rng(m, Xoshiro256Plus::seed_from_u64(seed))
        .n_runs(KMEANS_RESTARTS)
        .tolerance(TOLERANCE)
        .max_n_iterations(MAX_ITERATIONS)
        .fit(&dataset)
        .map_err(|e| kmeans_err(e.to_string()))?;
    let mut labels: Vec<usize> = model.predict(&records).to_vec();
    let centroids = model.centroids();
    let dist2 = |i: usize, c: usize| -> f64 {
        records
            .row(i)
            .iter()
            .zip(centroids.row(c).iter())
            .map(|(a, b)| (a - b) * (a - b))
            .sum()
    };
    fill_empty_clusters(&mut labels, m, dist2);
    Ok(renumber_by_first_member(&labels))
}

/// Give every empty cluster one point: the point farthest from its own centroid among
/// clusters with two or more members (lowest index on ties). Needs `labels.len() ≥ m`.
fn fill_empty_clusters(labels: &mut [usize], m: usize, dist2: impl Fn(usize, usize) -> f64) {
    let mut sizes = vec![0usize; m];
    for &l in labels.iter() {
        sizes[l] += 1;
    }
    while let Some(empty) = sizes.iter().position(|&s| s == 0) {
        let mut best: Option<(usize, f64)> = None;
        for (i, &l) in labels.iter().enumerate() {
            if sizes[l] < 2 {
                continue;
            }
            let d = dist2(i, l);
            if best.is_none_or(|(_, bd)| d > bd) {
                best = Some((i, d));
            }
        }
        // With labels.len() ≥ m, an empty cluster implies a cluster of two or more.
        let Some((i, _)) = best else { return };
        sizes[labels[i]] -= 1;
        labels[i] = empty;
        sizes[empty] += 1;
    }
}

/// Relabel clusters `0..` in order of their first member.
fn renumber_by_first_member(labels: &[usize]) -> Vec<usize> {
    let mut map: Vec<Option<usize>> = Vec::new();
    let mut next = 0;
    labels
        .iter()
        .map(|&l| {
            if map.len() <= l {
                map.resize(l + 1, None);
            }
            *map[l].get_or_insert_with(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_still_give_m_clusters() {
        let v = vec![vec![1.0, 1.0]; 5];
        let labels = kmeans_assign(&v, 3, 7).expect("kmeans");
        let mut seen = labels.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, vec![0, 1, 2]);
        assert_eq!(labels[0], 0);
    }

    #[test]
    fn renumbering_follows_first_members() {
        assert_eq!(
            renumber_by_first_member(&[2, 2, 0, 1, 0]),
            vec![0, 0, 1, 2, 1]
        );
    }

    #[test]
    fn bad_inputs_are_errors() {
        let v = vec![vec![0.0], vec![1.0]];
        assert!(kmeans_assign(&v, 0, 1).is_err());
        assert!(kmeans_assign(&v, 3, 1).is_err());
        assert!(kmeans_assign(&[vec![0.0], vec![f32::NAN]], 1, 1).is_err());
        assert!(kmeans_assign(&[vec![0.0], vec![1.0, 2.0]], 1, 1).is_err());
    }
}
