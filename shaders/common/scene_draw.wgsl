// Bindings of the passes that rasterise the scene's draws (G-buffer, shadow): the layout
// `render::passes::scene_draw::SceneDraw` creates. With ALPHA_TEST, group 1 is the
// material's bind group (common/material_textures.wgsl), of which the alpha test reads
// the base colour (`tex_group0`) and the sampler.

#import "common/frame.wgsl"

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> instances: array<InstanceData>;
@group(0) @binding(2) var<storage, read> materials: array<MaterialData>;

#ifdef ALPHA_TEST
#import "common/material_textures.wgsl"
#endif
