//! [`CachedBindGroup`]: a pass's bind group remembered together with the resources it was
//! made from, and made again when the pass is handed different ones.
//!
//! Passes record with explicit inputs and outputs (texture views, buffers) every frame;
//! this keeps that from costing a bind group per frame. Resources are compared by
//! identity (wgpu's handles compare by the object they name), so a resized target, another
//! package's buffers or the other half of a ping-pong pair simply make a new bind group,
//! and nothing outside the pass has to say that something changed. The cache holds clones
//! of the handles of its one bind group, so at most one set of replaced resources stays
//! alive until the pass records again.

use std::sync::{Mutex, PoisonError};

/// One bound resource, by identity.
#[derive(Clone, Debug, PartialEq)]
enum Bound {
    Buffer {
        buffer: wgpu::Buffer,
        offset: u64,
        size: Option<wgpu::BufferSize>,
    },
    View(wgpu::TextureView),
    Sampler(wgpu::Sampler),
}

impl Bound {
    /// The identity of `resource`; `None` for kinds the cache does not track (arrays,
    /// acceleration structures), which are bound afresh every time.
    fn of(resource: &wgpu::BindingResource<'_>) -> Option<Self> {
        match resource {
            wgpu::BindingResource::Buffer(b) => Some(Bound::Buffer {
                buffer: b.buffer.clone(),
                offset: b.offset,
                size: b.size,
            }),
            wgpu::BindingResource::TextureView(v) => Some(Bound::View((*v).clone())),
            wgpu::BindingResource::Sampler(s) => Some(Bound::Sampler((*s).clone())),
            _ => None,
        }
    }
}

/// The key of a bind group: its layout and every `(binding, resource)`.
type Key = (wgpu::BindGroupLayout, Vec<(u32, Bound)>);

/// A bind group and what it binds. See the module docs.
#[derive(Debug, Default)]
pub struct CachedBindGroup {
    slot: Mutex<Option<(Key, wgpu::BindGroup)>>,
}

impl CachedBindGroup {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bind group of `layout` over `resources`: the cached one when it binds exactly
    /// these, else a new one (labelled `label`), which replaces it.
    pub fn get(
        &self,
        device: &wgpu::Device,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        resources: &[(u32, wgpu::BindingResource<'_>)],
    ) -> wgpu::BindGroup {
        let bound: Option<Vec<(u32, Bound)>> = resources
            .iter()
            .map(|(binding, resource)| Bound::of(resource).map(|b| (*binding, b)))
            .collect();
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(bound), Some(((cached_layout, cached), group))) = (&bound, slot.as_ref())
            && cached_layout == layout
            && cached == bound
        {
            return group.clone();
        }
        let group = crate::gpu::layout::bind_group(device, label, layout, resources);
        *slot = bound.map(|bound| ((layout.clone(), bound), group.clone()));
        group
    }
}
