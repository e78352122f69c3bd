//! The device context: device + queue from outside (or from the
//! environment), limits, the compiled-pipeline cache, and the plumbing every
//! launcher shares (error scopes, binding windows, dispatch grids).

use crate::error::{GpuError, Result};
use crate::shader::{self, Kernel, MessageOp};
use gnnkern_simd::op::ReduceKind;
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use wgpu::util::DeviceExt;

/// What adapter a context runs on, for logs and benchmark labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `Cpu` (software rasteriser such as lavapipe), ...
    pub device_type: String,
    pub driver: String,
}

impl AdapterSummary {
    fn of(info: &wgpu::AdapterInfo) -> Self {
        Self {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
        }
    }

    /// Whether this is a software implementation (timings are not GPU timings).
    pub fn is_software(&self) -> bool {
        self.device_type == "Cpu"
    }
}

impl std::fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {}, {})", self.name, self.backend, self.device_type, self.driver)
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A wgpu device and queue with everything the kernels need.
///
/// Create one from your own device with [`GpuContext::new`] (a host framework
/// or a test that declares its own limits), or from the environment with
/// [`GpuContext::from_env`]. Uploaded graphs and tensors belong to the
/// context that created them.
pub struct GpuContext {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: AdapterSummary,
    id: u64,
    /// Largest storage binding the planner may use, in bytes.
    max_binding: u64,
    /// Alignment of binding offsets, in bytes.
    offset_align: u64,
    max_buffer: u64,
    max_groups: u32,
    layouts: Mutex<HashMap<Kernel, Arc<(wgpu::BindGroupLayout, wgpu::PipelineLayout)>>>,
    pipelines: Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>,
    lost: Arc<Mutex<Option<String>>>,
    dummy: wgpu::Buffer,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.adapter)
            .field("id", &self.id)
            .field("max_binding", &self.max_binding)
            .finish()
    }
}

impl GpuContext {
    /// Wraps a caller's device and queue. The device must allow at least
    /// [`crate::WG`] invocations per workgroup and 7 storage buffers per
    /// stage (WebGPU's defaults do).
    pub fn new(device: wgpu::Device, queue: wgpu::Queue, adapter: &wgpu::AdapterInfo) -> Result<Self> {
        let limits = device.limits();
        let (ro, rw) = Kernel::SpmmAccumulate.storage();
        if limits.max_storage_buffers_per_shader_stage < ro + rw {
            return Err(GpuError::Unsupported(format!(
                "the device allows {} storage buffers per shader stage; the kernels need {}",
                limits.max_storage_buffers_per_shader_stage,
                ro + rw
            )));
        }
        if limits.max_compute_invocations_per_workgroup < shader::WG || limits.max_compute_workgroup_size_x < shader::WG
        {
            return Err(GpuError::Unsupported(format!(
                "the device allows {} invocations per workgroup; the kernels need {}",
                limits.max_compute_invocations_per_workgroup,
                shader::WG
            )));
        }
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gnnkern dummy operand"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let ctx = Self {
            max_binding: limits.max_storage_buffer_binding_size.min(limits.max_buffer_size),
            offset_align: u64::from(limits.min_storage_buffer_offset_alignment),
            max_buffer: limits.max_buffer_size,
            max_groups: limits.max_compute_workgroups_per_dimension,
            adapter: AdapterSummary::of(adapter),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            layouts: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            lost: Arc::new(Mutex::new(None)),
            dummy,
            device,
            queue,
        };
        log::debug!("gnnkern-gpu context {} on {}", ctx.id, ctx.adapter);
        Ok(ctx)
    }

    /// A context on the adapter the environment selects: `WGPU_BACKEND`
    /// (e.g. `vulkan`, `gl`), `WGPU_ADAPTER_NAME` (a case-insensitive
    /// substring of the adapter name; no match is an error, not a silent
    /// fallback), `WGPU_POWER_PREF` (`low`/`high`). The device gets the
    /// adapter's full limits, so large tensors need fewer binding windows.
    pub fn from_env() -> Result<Self> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(select_adapter(&instance))?;
        let info = adapter.get_info();
        let desc = wgpu::DeviceDescriptor {
            label: Some("gnnkern"),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc))
            .map_err(|e| GpuError::Device(format!("request_device on {}: {e}", info.name)))?;
        let ctx = Self::new(device, queue, &info)?;
        // Owned device: report loss as an error on the next call, and never
        // let an uncaptured error panic (every op runs in error scopes).
        let lost = Arc::clone(&ctx.lost);
        ctx.device.set_device_lost_callback(move |reason, msg| {
            *lost.lock().unwrap_or_else(PoisonError::into_inner) = Some(format!("{reason:?}: {msg}"));
        });
        ctx.device.on_uncaptured_error(Arc::new(|e| log::error!("uncaptured wgpu error: {e}")));
        Ok(ctx)
    }

    /// Caps the storage binding size the planner uses (it is always also
    /// capped by the device limit). Tests use it to force binding windows
    /// on small inputs; it must leave room for the offset alignment plus a row.
    pub fn with_max_binding_bytes(mut self, bytes: u64) -> Self {
        self.max_binding = bytes.min(self.max_binding);
        self
    }

    /// The adapter this context runs on.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.adapter
    }

    /// A process-unique id (caches keyed by context use it).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The storage binding size the planner works with, in bytes.
    pub fn max_binding_bytes(&self) -> u64 {
        self.max_binding
    }

    pub(crate) fn offset_align(&self) -> u64 {
        self.offset_align
    }

    /// Runs `f` (which records and submits GPU work) inside out-of-memory,
    /// validation and internal error scopes and waits for the queue, turning
    /// every device failure into a typed error.
    pub(crate) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_lost()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let out = f();
        let poll = self.device.poll(wgpu::PollType::wait_indefinitely());
        let e_internal = pollster::block_on(internal.pop());
        let e_validation = pollster::block_on(validation.pop());
        let e_oom = pollster::block_on(oom.pop());
        if let Some(e) = e_oom {
            return Err(GpuError::OutOfMemory(format!("{what}: {e}")));
        }
        if let Some(e) = e_validation.or(e_internal) {
            return Err(GpuError::Device(format!("{what}: {e}")));
        }
        poll.map_err(|e| GpuError::Device(format!("{what}: waiting for the queue: {e}")))?;
        self.check_lost()?;
        out
    }

    fn check_lost(&self) -> Result<()> {
        match &*self.lost.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(reason) => Err(GpuError::Device(format!("device lost ({reason})"))),
            None => Ok(()),
        }
    }

    /// Runs `f` (which only creates resources) inside out-of-memory and
    /// validation error scopes, so a failed allocation is an error value
    /// even on a caller's device whose uncaptured-error handler panics.
    fn guarded<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check_lost()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let e_validation = pollster::block_on(validation.pop());
        let e_oom = pollster::block_on(oom.pop());
        if let Some(e) = e_oom {
            return Err(GpuError::OutOfMemory(format!("{what}: {e}")));
        }
        if let Some(e) = e_validation {
            return Err(GpuError::Device(format!("{what}: {e}")));
        }
        Ok(out)
    }

    /// Checks that a buffer of `bytes` can exist on this device.
    pub(crate) fn check_buffer_size(&self, what: &str, bytes: u64) -> Result<()> {
        if bytes > self.max_buffer {
            return Err(GpuError::Unsupported(format!(
                "{what} needs a {bytes}-byte buffer; the device's max_buffer_size is {}",
                self.max_buffer
            )));
        }
        Ok(())
    }

    /// A storage buffer initialised with `words` (u32/f32/i32 as raw bits).
    pub(crate) fn storage_init(&self, label: &str, contents: &[u8]) -> Result<wgpu::Buffer> {
        self.check_buffer_size(label, contents.len() as u64)?;
        let padded;
        let contents = if contents.len() < 16 {
            padded = [contents, &[0u8; 16][..16 - contents.len()]].concat();
            &padded[..]
        } else {
            contents
        };
        self.guarded(label, || {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            })
        })
    }

    /// A zero-filled storage buffer of `words` 4-byte words.
    pub(crate) fn storage_zeroed(&self, label: &str, words: usize) -> Result<wgpu::Buffer> {
        let bytes = (words as u64).saturating_mul(4).max(16);
        self.check_buffer_size(label, bytes)?;
        self.guarded(label, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// Copies the first `words` words of `buffer` back to the host.
    pub(crate) fn read_words(&self, buffer: &wgpu::Buffer, words: usize) -> Result<Vec<u32>> {
        if words == 0 {
            return Ok(Vec::new());
        }
        let bytes = words as u64 * 4;
        let staging = self.guarded("download staging buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gnnkern download"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        self.scoped("download", || {
            let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
            self.queue.submit([enc.finish()]);
            Ok(())
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Device(format!("download: waiting for the map: {e}")))?;
        rx.recv()
            .map_err(|_| GpuError::Device("download: the map callback never ran".into()))?
            .map_err(|e| GpuError::Device(format!("download: mapping failed: {e}")))?;
        let view = staging.get_mapped_range(..).map_err(|e| GpuError::Device(format!("download: {e}")))?;
        let out = bytemuck::pod_collect_to_vec::<u8, u32>(&view);
        drop(view);
        staging.unmap();
        Ok(out)
    }

    /// The compiled pipeline of `kernel` for `op` and `reduce` (cached by source).
    pub(crate) fn pipeline(
        &self,
        kernel: Kernel,
        op: &MessageOp,
        reduce: ReduceKind,
    ) -> Result<(Arc<wgpu::ComputePipeline>, wgpu::BindGroupLayout)> {
        let layout = self.layout(kernel);
        let source = shader::source(kernel, op, reduce);
        let mut cache = self.pipelines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = cache.get(&source) {
            return Ok((Arc::clone(p), layout.0.clone()));
        }
        let pipeline = self
            .scoped(&format!("compiling the {kernel:?} shader for operator {}", op.name), || {
                let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(op.name),
                    source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                });
                Ok(self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(op.name),
                    layout: Some(&layout.1),
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                }))
            })
            .map_err(|e| match e {
                GpuError::Device(msg) => {
                    GpuError::Unsupported(format!("operator {} has no working WGSL form: {msg}", op.name))
                }
                other => other,
            })?;
        let pipeline = Arc::new(pipeline);
        cache.insert(source, Arc::clone(&pipeline));
        Ok((pipeline, layout.0.clone()))
    }

    fn layout(&self, kernel: Kernel) -> Arc<(wgpu::BindGroupLayout, wgpu::PipelineLayout)> {
        let mut layouts = self.layouts.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(layouts.entry(kernel).or_insert_with(|| {
            let (ro, rw) = kernel.storage();
            let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            };
            let mut entries = vec![wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }];
            entries.extend((1..=ro).map(|b| storage(b, true)));
            entries.extend((ro + 1..=ro + rw).map(|b| storage(b, false)));
            let bgl = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("gnnkern"),
                entries: &entries,
            });
            let pl = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("gnnkern"),
                bind_group_layouts: &[Some(&bgl)],
                immediate_size: 0,
            });
            Arc::new((bgl, pl))
        }))
    }

    /// Records one dispatch of `n_groups` workgroups (folded into a 2-D grid
    /// when it exceeds the per-dimension limit) with `params` as the uniform
    /// block and `bindings` as storage bindings 1.. in order.
    pub(crate) fn dispatch(
        &self,
        enc: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        layout: &wgpu::BindGroupLayout,
        params: &[u8],
        bindings: &[Binding<'_>],
        n_groups: u64,
    ) -> Result<()> {
        if n_groups == 0 {
            return Ok(());
        }
        let max = u64::from(self.max_groups);
        let x = n_groups.min(max);
        let y = n_groups.div_ceil(x);
        if y > max {
            return Err(GpuError::Unsupported(format!(
                "{n_groups} workgroups exceed the device's {max}×{max} dispatch grid"
            )));
        }
        let uniform = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("gnnkern params"),
            contents: params,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        for (i, b) in bindings.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: b.buffer,
                    offset: b.offset,
                    size: NonZeroU64::new(b.size),
                }),
            });
        }
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("gnnkern"),
            layout,
            entries: &entries,
        });
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(x as u32, y as u32, 1);
        Ok(())
    }

    /// Binds words `first..end` of `buffer` (which holds `total` words)
    /// through a window whose offset is aligned down to the device's
    /// storage offset alignment; returns the binding and the word index the
    /// window starts at (the shader subtracts it from global indices).
    pub(crate) fn window<'a>(
        &self,
        buffer: &'a wgpu::Buffer,
        total: usize,
        first: usize,
        end: usize,
    ) -> Result<(Binding<'a>, u32)> {
        // An empty range still needs a valid (non-empty) binding inside the buffer.
        let first = first.min(total.saturating_sub(1));
        let offset = (first as u64 * 4) / self.offset_align * self.offset_align;
        let end_bytes = (end.max(first + 1) as u64 * 4).min(buffer.size());
        let size = end_bytes.saturating_sub(offset);
        if size == 0 || size > self.max_binding {
            return Err(GpuError::Unsupported(format!(
                "a {size}-byte binding window (words {first}..{end} of {total}) exceeds the {}-byte storage binding limit",
                self.max_binding
            )));
        }
        Ok((Binding { buffer, offset, size }, (offset / 4) as u32))
    }

    /// Binds the placeholder buffer for an operand the operator does not read.
    pub(crate) fn unused(&self) -> Binding<'_> {
        Binding { buffer: &self.dummy, offset: 0, size: 16 }
    }
}

/// One storage binding: a window of a buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Binding<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub size: u64,
}

/// Picks the adapter: `WGPU_ADAPTER_NAME` if set (an error when nothing
/// matches), else wgpu's choice under `WGPU_POWER_PREF`.
async fn select_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter> {
    let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
    let names: Vec<String> = adapters.iter().map(|a| AdapterSummary::of(&a.get_info()).to_string()).collect();
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
        let wanted = wanted.to_lowercase();
        return adapters.into_iter().find(|a| a.get_info().name.to_lowercase().contains(&wanted)).ok_or_else(|| {
            GpuError::NoAdapter(format!("WGPU_ADAPTER_NAME={wanted:?} matches none of the adapters {names:?}"))
        });
    }
    let options = wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(),
        ..Default::default()
    };
    instance.request_adapter(&options).await.map_err(|e| {
        GpuError::NoAdapter(format!(
            "{e} (adapters found: {names:?}; on Linux without a GPU install Mesa's lavapipe: \
             apt-get install -y mesa-vulkan-drivers libvulkan1)"
        ))
    })
}
