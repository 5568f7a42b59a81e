//! Decodes the kubelet's `ListPodResourcesResponse` (protobuf wire format) straight into the
//! containers that hold GPUs. Pure: bytes in, `PodGpus` out; it knows nothing of sockets,
//! HTTP/2 or gRPC framing (see `grpc`), and must never panic on any input.
//!
//! Written by hand rather than with `prost`: we only read, and only eight fields of four
//! messages (names, resource names, device IDs); everything else — `cpu_ids`, `memory`,
//! `topology`, `dynamic_resources`, fields a newer kubelet adds — is skipped by wire type.
//! That is one varint reader and one skip, about 130 lines of code, against two more
//! crates and a proc-macro (prost, prost-derive with anyhow) on every CI build. It also
//! walks borrowed slices and allocates only for GPU-holding containers: on a node of 100
//! CPU-only pods it allocates no strings at all, where decoding into message structs first
//! would copy every name.
//!
//! The schema (k8s.io/kubelet/pkg/apis/podresources/v1/api.proto, the fields we read):
//! `ListPodResourcesResponse { repeated PodResources pod_resources = 1; }`,
//! `PodResources { string name = 1; string namespace = 2;`
//! `  repeated ContainerResources containers = 3; }`,
//! `ContainerResources { string name = 1; repeated ContainerDevices devices = 2; … }`,
//! `ContainerDevices { string resource_name = 1; repeated string device_ids = 2; … }`.

use super::{GpuDevice, PodGpus};

/// Why the response's protobuf could not be read. The messages name the part that broke,
/// for a bug report against whatever sits on the socket.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the message ends in the middle of a field")]
    Truncated,
    #[error("a varint is longer than 10 bytes")]
    VarintTooLong,
    #[error("a field number of 0 or over 2^29, which protobuf never uses")]
    BadFieldNumber,
    #[error("wire type {0}, which proto3 never sends (groups or unknown)")]
    UnsupportedWireType(u8),
    #[error("field {field} of {message} has wire type {found}, not length-delimited")]
    WrongWireType {
        message: &'static str,
        field: u32,
        found: u8,
    },
    #[error("field {field} of {message} is a string but not UTF-8")]
    NotUtf8 { message: &'static str, field: u32 },
}

/// One field's value, as much as the wire format tells without the schema.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    /// Varints and fixed-width numbers: we read none, so their value is not kept.
    Scalar(u8),
    Bytes(&'a [u8]),
}

/// Walks the fields of one message.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Fields { rest: buf }
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for i in 0..10 {
            let (&byte, rest) = self.rest.split_first().ok_or(DecodeError::Truncated)?;
            self.rest = rest;
            // The 10th byte holds bit 63 only; higher bits are dropped, as protobuf does.
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::VarintTooLong)
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], DecodeError> {
        let n = usize::try_from(n).map_err(|_| DecodeError::Truncated)?;
        if n > self.rest.len() {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    /// The next field's number and value; `None` at the end of the message.
    fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>, DecodeError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let wire = (key & 7) as u8;
        let field = u32::try_from(key >> 3)
            .ok()
            .filter(|f| (1..1 << 29).contains(f))
            .ok_or(DecodeError::BadFieldNumber)?;
        let value = match wire {
            0 => {
                self.varint()?;
                Value::Scalar(wire)
            }
            1 => Value::Scalar(self.take(8).map(|_| wire)?),
            2 => {
                let len = self.varint()?;
                Value::Bytes(self.take(len)?)
            }
            5 => Value::Scalar(self.take(4).map(|_| wire)?),
            other => return Err(DecodeError::UnsupportedWireType(other)),
        };
        Ok(Some((field, value)))
    }
}

/// A length-delimited field's bytes; any other wire type for a field we read is an error
/// (the sender's schema is not ours).
fn bytes<'a>(message: &'static str, field: u32, value: Value<'a>) -> Result<&'a [u8], DecodeError> {
    match value {
        Value::Bytes(b) => Ok(b),
        Value::Scalar(found) => Err(DecodeError::WrongWireType {
            message,
            field,
            found,
        }),
    }
}

fn string<'a>(message: &'static str, field: u32, value: Value<'a>) -> Result<&'a str, DecodeError> {
    std::str::from_utf8(bytes(message, field, value)?)
        .map_err(|_| DecodeError::NotUtf8 { message, field })
}

/// Every container of the response that holds at least one GPU, in the kubelet's order.
/// Pods and containers with CPU, memory or non-GPU devices only are left out.
pub fn gpu_pods(response: &[u8]) -> Result<Vec<PodGpus>, DecodeError> {
    let mut out = Vec::new();
    let mut fields = Fields::new(response);
    while let Some((field, value)) = fields.next_field()? {
        if field == 1 {
            pod(bytes("ListPodResourcesResponse", 1, value)?, &mut out)?;
        }
    }
    Ok(out)
}

/// One `PodResources`: its GPU containers are appended to `out`. Fields may come in any
/// order, so the containers are decoded first and named once the whole pod is read.
fn pod(buf: &[u8], out: &mut Vec<PodGpus>) -> Result<(), DecodeError> {
    const MSG: &str = "PodResources";
    let (mut name, mut namespace) = ("", "");
    let first = out.len();
    let mut fields = Fields::new(buf);
    while let Some((field, value)) = fields.next_field()? {
        match field {
            1 => name = string(MSG, 1, value)?,
            2 => namespace = string(MSG, 2, value)?,
            3 => {
                if let Some((container, gpus)) = container(bytes(MSG, 3, value)?)? {
                    out.push(PodGpus {
                        namespace: String::new(),
                        pod: String::new(),
                        container: container.to_string(),
                        gpus,
                    });
                }
            }
            _ => {}
        }
    }
    for entry in &mut out[first..] {
        entry.namespace = namespace.to_string();
        entry.pod = name.to_string();
    }
    Ok(())
}

/// One `ContainerResources`: its name and GPUs, or `None` when it holds none.
fn container(buf: &[u8]) -> Result<Option<(&str, Vec<GpuDevice>)>, DecodeError> {
    const MSG: &str = "ContainerResources";
    let mut name = "";
    let mut gpus: Vec<GpuDevice> = Vec::new();
    let mut fields = Fields::new(buf);
    while let Some((field, value)) = fields.next_field()? {
        match field {
            1 => name = string(MSG, 1, value)?,
            2 => devices(bytes(MSG, 2, value)?, &mut gpus)?,
            _ => {}
        }
    }
    Ok((!gpus.is_empty()).then_some((name, gpus)))
}

/// One `ContainerDevices`: when its resource is a GPU, its device IDs join `gpus` (once
/// each: time-sliced replicas of one GPU are one GPU here).
fn devices(buf: &[u8], gpus: &mut Vec<GpuDevice>) -> Result<(), DecodeError> {
    const MSG: &str = "ContainerDevices";
    let mut resource = "";
    let mut ids: Vec<&str> = Vec::new();
    let mut fields = Fields::new(buf);
    while let Some((field, value)) = fields.next_field()? {
        match field {
            1 => resource = string(MSG, 1, value)?,
            2 => ids.push(string(MSG, 2, value)?),
            _ => {}
        }
    }
    if is_gpu_resource(resource) {
        for device in ids.into_iter().filter_map(GpuDevice::parse) {
            if !gpus.contains(&device) {
                gpus.push(device);
            }
        }
    }
    Ok(())
}

/// The NVIDIA device plugin's resources: whole GPUs (`nvidia.com/gpu`), renamed shared ones
/// (`nvidia.com/gpu.shared` under time-slicing or MPS) and MIG slices under the mixed
/// strategy (`nvidia.com/mig-1g.10gb`).
pub fn is_gpu_resource(name: &str) -> bool {
    name.strip_prefix("nvidia.com/")
        .is_some_and(|r| r == "gpu" || r.starts_with("gpu.") || r.starts_with("mig-"))
}

impl GpuDevice {
    /// A device plugin ID as a GPU: a UUID (`GPU-…`, `MIG-…`) under the plugin's default
    /// `deviceIDStrategy=uuid`, a whole-GPU index under `index`. Time-slicing and MPS add a
    /// `::N` replica suffix, dropped here. Anything else (a MIG slice under `index`,
    /// `0:1`, which NVML's UUIDs cannot be matched against) is `None`.
    pub fn parse(id: &str) -> Option<GpuDevice> {
        let id = id.split_once("::").map_or(id, |(gpu, _replica)| gpu);
        if id.starts_with("GPU-") || id.starts_with("MIG-") {
            Some(GpuDevice::Uuid(id.to_string()))
        } else if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
            id.parse().ok().map(GpuDevice::Index)
        } else {
            None
        }
    }
}
