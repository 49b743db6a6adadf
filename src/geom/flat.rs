//! Flat vectors regrouped into fixed-size elements (`[f32; 3]` positions,
//! `[u32; 3]` triangles) without copying where the allocation allows.

/// Regroups a flat vector into N-element arrays, in place when its
/// capacity allows (it does for every vector the accessor reader allocates).
pub fn arrays<T: bytemuck::Pod, const N: usize>(flat: Vec<T>) -> Vec<[T; N]>
where
    [T; N]: bytemuck::Pod,
{
    let whole = flat.len() - flat.len() % N;
    let mut flat = flat;
    flat.truncate(whole);
    match bytemuck::allocation::try_cast_vec::<T, [T; N]>(flat) {
        Ok(v) => v,
        Err((_, flat)) => flat.chunks_exact(N).map(|c| std::array::from_fn(|i| c[i])).collect(),
    }
}
