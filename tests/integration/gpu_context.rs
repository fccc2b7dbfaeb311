//! GPU tests of the `gpu` module on a real adapter (lavapipe in CI): context creation,
//! pass timing through the profiler, readback with row padding, error scopes, shader-module creation.
//!
//! All tests share one headless context. Without an adapter they fail loudly (with the
//! install hint from `GpuError::NoAdapter`); they never pass silently.

use neurotex::gpu::upload::write_level;
use std::sync::OnceLock;

use neurotex::gpu::encoder::FrameEncoder;
use neurotex::gpu::shader::{ShaderLibrary, shader_source};
use neurotex::gpu::{Defines, GpuContext, GpuError, GpuProfiler, read_buffer, read_texture};

fn ctx() -> &'static GpuContext {
    static CTX: OnceLock<GpuContext> = OnceLock::new();
    CTX.get_or_init(|| {
        let _ = env_logger::builder().is_test(true).try_init();
        GpuContext::headless().unwrap_or_else(|e| panic!("GPU tests need an adapter: {e}"))
    })
}

/// Two compute passes: `fill` writes data[i] = 2i, `halve` halves it back to i.
const KERNELS: &str = r#"#import "common/math.wgsl"
@group(0) @binding(0) var<storage, read_write> data: array<f32>;

@compute @workgroup_size(${WG})
fn fill(@builtin(global_invocation_id) id: vec3u) {
    if id.x < arrayLength(&data) {
        data[id.x] = f32(id.x) * 2.0 + (PI - PI);
    }
}

@compute @workgroup_size(${WG})
fn halve(@builtin(global_invocation_id) id: vec3u) {
    if id.x < arrayLength(&data) {
        data[id.x] = data[id.x] * 0.5;
    }
}
"#;

const WG: u32 = 64;
const N: u32 = 1 << 16;

struct Kernels {
    fill: wgpu::ComputePipeline,
    halve: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    buffer: wgpu::Buffer,
}

fn kernels(ctx: &GpuContext) -> Kernels {
    let files = [("test/kernels.wgsl", KERNELS)];
    let library = ShaderLibrary::new(move |path| {
        files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, s)| *s)
            .or_else(|| shader_source(path))
    });
    let module = library
        .create_shader_module(ctx, "test/kernels.wgsl", &Defines::new().with("WG", WG))
        .unwrap_or_else(|e| panic!("{e}"));
    // One explicit layout shared by both pipelines (auto layouts are per pipeline).
    let bind_group_layout = ctx
        .device
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("kernels"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: false },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
    let layout = ctx
        .device
        .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("kernels"),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
    let pipeline = |entry: &str| {
        ctx.device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
    };
    let fill = pipeline("fill");
    let halve = pipeline("halve");
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("kernels data"),
        size: u64::from(N) * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("kernels"),
        layout: &bind_group_layout,
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    Kernels {
        fill,
        halve,
        bind_group,
        buffer,
    }
}

/// Records one timed pass per (label, pipeline).
fn record(
    ctx: &GpuContext,
    encoder: &mut wgpu::CommandEncoder,
    profiler: &GpuProfiler,
    k: &Kernels,
    passes: &[(&str, &wgpu::ComputePipeline)],
) {
    let mut frame = FrameEncoder::new(ctx, encoder, profiler);
    for (label, pipeline) in passes {
        frame.compute_pass(label, |pass| {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &k.bind_group, &[]);
            pass.dispatch_workgroups(N / WG, 1, 1);
        });
    }
}

/// One frame of `passes`: recorded, submitted, ended.
fn frame(
    ctx: &GpuContext,
    profiler: &mut GpuProfiler,
    k: &Kernels,
    passes: &[(&str, &wgpu::ComputePipeline)],
) {
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    record(ctx, &mut encoder, profiler, k, passes);
    ctx.queue.submit([encoder.finish()]);
    profiler.end_frame(ctx);
}

#[test]
fn context_negotiates_features_and_limits() {
    let ctx = ctx();
    println!("adapter: {}", ctx.describe());
    println!("granted: {}", ctx.granted);
    assert!(ctx.describe().contains(&ctx.info.name));
    // Requested limits are the adapter's own.
    assert_eq!(ctx.device.limits(), ctx.adapter.limits());
    let features = ctx.device.features();
    assert_eq!(
        ctx.granted.timestamps,
        features.contains(wgpu::Features::TIMESTAMP_QUERY)
    );
    assert_eq!(
        ctx.granted.shader_f16,
        features.contains(wgpu::Features::SHADER_F16)
    );
    // Everything granted is something the adapter offers.
    assert!(ctx.adapter.features().contains(features));
    match ctx.require(wgpu::Features::TEXTURE_COMPRESSION_ASTC_HDR) {
        Ok(()) => assert!(features.contains(wgpu::Features::TEXTURE_COMPRESSION_ASTC_HDR)),
        Err(e) => assert!(
            matches!(e, GpuError::MissingFeature { .. }) && e.to_string().contains("ASTC"),
            "{e}"
        ),
    }
}

#[test]
fn timed_compute_passes_report_labels_and_times() {
    let ctx = ctx();
    let k = kernels(ctx);
    let mut profiler = GpuProfiler::new(ctx);
    assert_eq!(profiler.is_enabled(), ctx.granted.timestamps);

    // Blocking path: frame, submit, end the frame, collect.
    frame(
        ctx,
        &mut profiler,
        &k,
        &[("fill", &k.fill), ("halve", &k.halve)],
    );
    let rows = profiler.collect(ctx);

    let data = read_buffer(ctx, &k.buffer, 0..u64::from(N) * 4).unwrap();
    let values: &[f32] = bytemuck::cast_slice(&data);
    assert!(values.iter().enumerate().all(|(i, &v)| v == i as f32));

    if !ctx.granted.timestamps {
        assert!(rows.is_empty());
        return;
    }
    println!("{rows:?}");
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["fill", "halve"]);
    for row in &rows {
        assert!(row.ms.is_finite() && row.ms >= 0.0, "{row:?}");
        // A 65 536-invocation dispatch takes well under a second even on lavapipe.
        assert!(row.ms < 1000.0, "{row:?}");
    }
    // Zero for every pass would mean the timestamps were read before they landed
    // (wgpu issue 6406), which resolving them in a later submission avoids.
    assert!(rows.iter().any(|r| r.ms > 0.0), "{rows:?}");

    // Non-blocking path: two frames in flight; once the GPU is done, try_collect returns
    // the newest, and nothing more until another frame finishes.
    for frame_labels in [["a_fill", "a_halve"], ["b_fill", "b_halve"]] {
        let passes = [(frame_labels[0], &k.fill), (frame_labels[1], &k.halve)];
        frame(ctx, &mut profiler, &k, &passes);
    }
    ctx.wait_idle().unwrap();
    let rows = profiler.try_collect(ctx).expect("the frames have finished");
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["b_fill", "b_halve"]);
    assert!(
        profiler.try_collect(ctx).is_none(),
        "every finished frame was taken"
    );

    // No pass goes untimed, however many a frame has.
    let many: Vec<String> = (0..40).map(|i| format!("p{i}")).collect();
    let passes: Vec<(&str, &wgpu::ComputePipeline)> =
        many.iter().map(|l| (l.as_str(), &k.fill)).collect();
    frame(ctx, &mut profiler, &k, &passes);
    let rows = profiler.collect(ctx);
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, many);

    // A trace keeps every collected frame and is written as a Chrome trace.
    profiler.start_trace();
    for _ in 0..2 {
        frame(
            ctx,
            &mut profiler,
            &k,
            &[("fill", &k.fill), ("halve", &k.halve)],
        );
        profiler.collect(ctx);
    }
    let dir = std::env::temp_dir().join(format!("neurotex-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.json");
    assert_eq!(profiler.write_trace(&path).unwrap(), 4);
    let trace = crate::common::read_json(&path);
    let events = trace["traceEvents"].as_array().expect("trace events");
    assert!(events.iter().any(|e| e["name"] == "halve"), "{trace}");
    assert!(!profiler.is_tracing());
    assert!(
        profiler.write_trace(&path).is_err(),
        "no trace is recorded now"
    );
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

#[test]
fn readback_strips_row_padding_exactly() {
    let ctx = ctx();
    let size = wgpu::Extent3d {
        width: 3,
        height: 5,
        depth_or_array_layers: 2,
    };
    let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("readback 3x5"),
        size,
        mip_level_count: 2,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    // 12-byte rows: the copy pads them to 256.
    let layer1: Vec<u8> = (0..3 * 5 * 4).map(|i| (i * 7 + 3) as u8).collect();
    let mip1: Vec<u8> = (0..2 * 4).map(|i| 200 + i as u8).collect(); // 1×2 texels
    let write = |mip_level: u32, z: u32, data: &[u8], width: u32, height: u32| {
        ctx.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &texture,
                mip_level,
                origin: wgpu::Origin3d { x: 0, y: 0, z },
                aspect: wgpu::TextureAspect::All,
            },
            data,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(width * 4),
                rows_per_image: Some(height),
            },
            wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
        );
    };
    write(0, 1, &layer1, 3, 5);
    write(1, 0, &mip1, 1, 2);

    let read = read_texture(ctx, &texture, 0, 1).unwrap();
    assert_eq!((read.width, read.height), (3, 5));
    assert_eq!(read.format, wgpu::TextureFormat::Rgba8Unorm);
    assert_eq!(read.as_bytes(), layer1.as_slice());
    assert_eq!(read.texel(2, 4), &layer1[56..60]);
    let read = read_texture(ctx, &texture, 1, 0).unwrap();
    assert_eq!((read.width, read.height), (1, 2));
    assert_eq!(read.as_bytes(), mip1.as_slice());
    assert!(read_texture(ctx, &texture, 2, 0).is_err());
    assert!(read_texture(ctx, &texture, 0, 2).is_err());

    // Float conversion: a 3×1 Rgba16Float texture.
    let half = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("readback f16"),
        size: wgpu::Extent3d {
            width: 3,
            height: 1,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba16Float,
        usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    // 1.0, -2.0, 0.5, 0.0 repeated.
    let texels: Vec<u8> = [0x3c00u16, 0xc000, 0x3800, 0x0000]
        .repeat(3)
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write_level(&ctx.queue, &half, 0, &texels);
    let values = read_texture(ctx, &half, 0, 0).unwrap().to_f32().unwrap();
    assert_eq!(values, [1.0, -2.0, 0.5, 0.0].repeat(3));
}

#[test]
fn error_scopes_return_validation_errors() {
    let ctx = ctx();
    let before = ctx.uncaptured_error_count();
    let result = ctx.error_scope(|| {
        ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("invalid usage"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE,
            mapped_at_creation: false,
        })
    });
    match result {
        Err(GpuError::Validation(message)) => assert!(!message.is_empty()),
        other => panic!("expected a validation error, got {other:?}"),
    }
    assert_eq!(ctx.error_scope(|| 7).unwrap(), 7);
    assert_eq!(ctx.uncaptured_error_count(), before);

    let no_copy = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("no copy src"),
        size: wgpu::Extent3d {
            width: 4,
            height: 4,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    });
    let err = read_texture(ctx, &no_copy, 0, 0).unwrap_err();
    assert!(err.to_string().contains("COPY_SRC"), "{err}");
}

#[test]
fn f16_shader_modules_follow_the_granted_feature() {
    let ctx = ctx();
    let files = [(
        "half.wgsl",
        "enable f16;\n@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n\
         @compute @workgroup_size(1)\nfn main() { out[0] = f32(1.5h * 2.0h); }\n",
    )];
    let library = ShaderLibrary::from_files(&files);
    let result = library.create_shader_module(ctx, "half.wgsl", &Defines::new());
    if ctx.granted.shader_f16 {
        result.unwrap_or_else(|e| panic!("{e}"));
    } else {
        let err = result.unwrap_err().to_string();
        assert!(err.contains("half.wgsl"), "{err}");
    }
}

#[test]
fn allocation_scopes_catch_out_of_memory_only() {
    let ctx = ctx();
    let device = &ctx.device;
    let buffer = |size| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("allocate test"),
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let made = neurotex::gpu::allocate(device, "a small buffer", || (buffer(256), 256))
        .expect("256 bytes fit");
    assert_eq!(made.size(), 256);
    // A validation error inside the out-of-memory scope is not reported as out of memory:
    // it reaches the enclosing validation scope.
    let too_large = device.limits().max_buffer_size + 4;
    let inner = ctx
        .error_scope(|| {
            neurotex::gpu::allocate(device, "an invalid buffer", || {
                (buffer(too_large), too_large)
            })
        })
        .expect_err("the validation scope sees the invalid buffer");
    assert!(inner.to_string().contains("allocate test"), "{inner}");
    assert_eq!(ctx.uncaptured_error_count(), 0);
}
