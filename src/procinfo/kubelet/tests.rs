//! The protobuf decoding on messages encoded here, field by field, as the kubelet's Go
//! protobuf writes them; plus the encoder the stand-in server (`stand_in`) answers with.

use proptest::prelude::*;

use super::proto::{DecodeError, gpu_pods, is_gpu_resource};
use super::{GpuDevice, PodGpus};

/// A protobuf message under construction: just enough of an encoder for the tests.
#[derive(Debug, Clone, Default)]
pub(super) struct Msg(pub Vec<u8>);

impl Msg {
    fn key(mut self, field: u32, wire: u8) -> Self {
        self.varint_raw((u64::from(field) << 3) | u64::from(wire));
        self
    }

    fn varint_raw(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    pub fn bytes(self, field: u32, data: &[u8]) -> Self {
        let mut m = self.key(field, 2);
        m.varint_raw(data.len() as u64);
        m.0.extend_from_slice(data);
        m
    }

    pub fn str(self, field: u32, s: &str) -> Self {
        self.bytes(field, s.as_bytes())
    }

    pub fn msg(self, field: u32, m: Msg) -> Self {
        self.bytes(field, &m.0)
    }

    pub fn varint(self, field: u32, v: u64) -> Self {
        let mut m = self.key(field, 0);
        m.varint_raw(v);
        m
    }

    fn fixed(self, field: u32, wire: u8, len: usize) -> Self {
        let mut m = self.key(field, wire);
        m.0.extend(std::iter::repeat_n(0xAB, len));
        m
    }
}

/// `TopologyInfo { nodes: [NUMANode { ID: node }] }`.
fn topology(node: u64) -> Msg {
    Msg::default().msg(1, Msg::default().varint(1, node))
}

fn devices(resource: &str, ids: &[&str]) -> Msg {
    let m = Msg::default().str(1, resource);
    ids.iter().fold(m, |m, id| m.str(2, id)).msg(3, topology(0))
}

/// What a GPU node's kubelet answers: a trainer with two GPUs (and CPU pinning, memory, an
/// RDMA device and a CPU-only sidecar), an inference server on a MIG slice, and a pod with
/// CPUs only.
pub(crate) fn node_response() -> Vec<u8> {
    let packed_cpus = Msg::default().bytes(3, &[0, 1, 2, 3]);
    let memory = Msg::default()
        .str(1, "memory")
        .varint(2, 8 << 30)
        .msg(3, topology(0));
    let trainer = Msg(packed_cpus.0.clone())
        .str(1, "trainer")
        .msg(
            2,
            devices(
                "nvidia.com/gpu",
                &["GPU-11111111-aaaa", "GPU-22222222-bbbb"],
            ),
        )
        .msg(2, devices("rdma/hca", &["hca0"]))
        .msg(4, memory);
    let sidecar = Msg(packed_cpus.0.clone()).str(1, "log-shipper");
    let server = Msg::default()
        .str(1, "server")
        .msg(2, devices("nvidia.com/mig-1g.10gb", &["MIG-33333333-cccc"]));
    let web = Msg::default().str(1, "nginx").bytes(3, &[4, 5]);
    let pod = |name: &str, ns: &str, containers: Vec<Msg>| {
        let m = Msg::default().str(1, name).str(2, ns);
        containers.into_iter().fold(m, |m, c| m.msg(3, c))
    };
    Msg::default()
        .msg(1, pod("trainer-0", "ml", vec![trainer, sidecar]))
        .msg(1, pod("infer-7f9c", "serving", vec![server]))
        .msg(1, pod("web-5d4", "default", vec![web]))
        .0
}

pub(super) fn node_pods() -> Vec<PodGpus> {
    let uuid = |s: &str| GpuDevice::Uuid(s.into());
    vec![
        PodGpus {
            namespace: "ml".into(),
            pod: "trainer-0".into(),
            container: "trainer".into(),
            gpus: vec![uuid("GPU-11111111-aaaa"), uuid("GPU-22222222-bbbb")],
        },
        PodGpus {
            namespace: "serving".into(),
            pod: "infer-7f9c".into(),
            container: "server".into(),
            gpus: vec![uuid("MIG-33333333-cccc")],
        },
    ]
}

#[test]
fn a_nodes_answer_names_the_gpu_containers_only() {
    assert_eq!(gpu_pods(&node_response()), Ok(node_pods()));
}

#[test]
fn an_empty_answer_is_no_pods() {
    assert_eq!(gpu_pods(&[]), Ok(vec![]));
}

#[test]
fn unknown_fields_of_every_wire_type_are_skipped_at_every_level() {
    let unknown = |m: Msg| {
        m.varint(9, u64::MAX)
            .fixed(10, 1, 8)
            .fixed(11, 5, 4)
            .bytes(12, b"\xff\x00not a message")
            .varint(536_870_911, 1)
    };
    let device = unknown(devices("nvidia.com/gpu", &["GPU-a"]));
    let container = unknown(Msg::default().str(1, "c").msg(2, device));
    let pod = unknown(Msg::default().str(1, "p").str(2, "n").msg(3, container));
    let response = unknown(Msg::default().msg(1, pod));
    let got = gpu_pods(&response.0).expect("decodes");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].gpus, vec![GpuDevice::Uuid("GPU-a".into())]);
}

#[test]
fn fields_may_come_in_any_order() {
    let device = Msg::default()
        .str(2, "GPU-a")
        .str(1, "nvidia.com/gpu")
        .str(2, "GPU-b");
    let container = Msg::default().msg(2, device).str(1, "c");
    let pod = Msg::default().msg(3, container).str(2, "ns").str(1, "p");
    let got = gpu_pods(&Msg::default().msg(1, pod).0).expect("decodes");
    assert_eq!(
        (got[0].pod.as_str(), got[0].namespace.as_str()),
        ("p", "ns")
    );
    assert_eq!(got[0].container, "c");
    assert_eq!(got[0].gpus.len(), 2);
}

#[test]
fn time_sliced_replicas_of_one_gpu_are_one_gpu() {
    let device = devices(
        "nvidia.com/gpu.shared",
        &["GPU-a::0", "GPU-a::1", "GPU-b::0"],
    );
    let container = Msg::default().str(1, "c").msg(2, device);
    let pod = Msg::default().str(1, "p").msg(3, container);
    let got = gpu_pods(&Msg::default().msg(1, pod).0).expect("decodes");
    let uuid = |s: &str| GpuDevice::Uuid(s.into());
    assert_eq!(got[0].gpus, vec![uuid("GPU-a"), uuid("GPU-b")]);
}

#[test]
fn every_cut_inside_a_pod_is_an_error() {
    let full = node_response();
    // The first pod's key and length take 3 bytes (a 2-byte length); any cut after them and
    // before its end leaves a field half-read.
    let first_pod_end = 3 + usize::from(full[1] & 0x7f) + (usize::from(full[2]) << 7);
    for cut in 1..first_pod_end {
        assert_eq!(
            gpu_pods(&full[..cut]),
            Err(DecodeError::Truncated),
            "cut at {cut}"
        );
    }
}

#[test]
fn broken_wire_format_is_named() {
    let wrong = Msg::default().msg(1, Msg::default().varint(1, 7)).0;
    assert_eq!(
        gpu_pods(&wrong),
        Err(DecodeError::WrongWireType {
            message: "PodResources",
            field: 1,
            found: 0
        })
    );
    let not_utf8 = Msg::default().msg(1, Msg::default().bytes(2, b"\xff")).0;
    assert_eq!(
        gpu_pods(&not_utf8),
        Err(DecodeError::NotUtf8 {
            message: "PodResources",
            field: 2
        })
    );
    assert_eq!(gpu_pods(&[0xff; 11]), Err(DecodeError::VarintTooLong));
    assert_eq!(gpu_pods(&[0x02, 0x00]), Err(DecodeError::BadFieldNumber));
    assert_eq!(
        gpu_pods(&[0x80, 0x80, 0x80, 0x80, 0x10, 0x00]),
        Err(DecodeError::BadFieldNumber),
        "field 2^29"
    );
    assert_eq!(gpu_pods(&[0x0b]), Err(DecodeError::UnsupportedWireType(3)));
    // A length beyond the buffer, including one past usize on 32-bit targets.
    let mut huge = vec![0x0a];
    huge.extend([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert_eq!(gpu_pods(&huge), Err(DecodeError::Truncated));
}

#[test]
fn device_ids_that_name_gpus() {
    let uuid = |s: &str| Some(GpuDevice::Uuid(s.into()));
    assert_eq!(
        GpuDevice::parse("GPU-8f2c1d90-3e5a"),
        uuid("GPU-8f2c1d90-3e5a")
    );
    assert_eq!(GpuDevice::parse("MIG-8f2c1d90::2"), uuid("MIG-8f2c1d90"));
    assert_eq!(GpuDevice::parse("3"), Some(GpuDevice::Index(3)));
    assert_eq!(GpuDevice::parse("0:1"), None, "a MIG slice by index");
    assert_eq!(GpuDevice::parse(""), None);
    assert_eq!(GpuDevice::parse("99999999999"), None);
    assert_eq!(GpuDevice::parse("-1"), None);
}

#[test]
fn gpu_resources_are_the_nvidia_plugins() {
    for gpu in [
        "nvidia.com/gpu",
        "nvidia.com/gpu.shared",
        "nvidia.com/mig-3g.40gb",
    ] {
        assert!(is_gpu_resource(gpu), "{gpu}");
    }
    for other in ["nvidia.com/gpus", "amd.com/gpu", "rdma/hca", "gpu", ""] {
        assert!(!is_gpu_resource(other), "{other}");
    }
}

fn cases() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        max_shrink_iters: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = gpu_pods(&bytes);
    }

    #[test]
    fn a_mutated_answer_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = node_response();
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let keep = cut.index(bytes.len() + 1);
        let _ = gpu_pods(&bytes[..keep]);
    }

    #[test]
    fn encoded_gpu_pods_decode_to_themselves(
        pods in prop::collection::vec(
            ("[a-z0-9-]{0,12}", "[a-z-]{0,8}", "[a-z]{1,8}",
             prop::collection::btree_set("GPU-[0-9a-f]{8}", 1..4)),
            0..6,
        ),
    ) {
        let mut response = Msg::default();
        let mut expected = Vec::new();
        for (pod, ns, container, uuids) in pods {
            let ids: Vec<&str> = uuids.iter().map(String::as_str).collect();
            let c = Msg::default().str(1, &container).msg(2, devices("nvidia.com/gpu", &ids));
            response = response.msg(1, Msg::default().str(1, &pod).str(2, &ns).msg(3, c));
            expected.push(PodGpus {
                namespace: ns,
                pod,
                container,
                gpus: uuids.into_iter().map(GpuDevice::Uuid).collect(),
            });
        }
        prop_assert_eq!(gpu_pods(&response.0), Ok(expected));
    }
}
