"""Performance data of the catalog GPUs, interconnect presets, host-side rates and the ``Cluster`` to predict on.

GPU figures are vendor datasheet values (dense, i.e. without 2:4 sparsity; tensor-core bf16, or fp16 where the
GPU has no bf16):

- NVIDIA H100 SXM5 80GB: 989 TFLOPs bf16, 3.35 TB/s HBM3, NVLink 4 900 GB/s (450 per direction), PCIe Gen5.
  Source: NVIDIA H100 Tensor Core GPU datasheet (2023), "H100 SXM" column.
- NVIDIA H200 141GB (SXM): 989 TFLOPs, 4.8 TB/s HBM3e, NVLink 900 GB/s, PCIe Gen5. Source: NVIDIA H200 datasheet.
- NVIDIA B200 180GB (HGX B200): 2250 TFLOPs dense bf16 (4.5 PF sparse), 8 TB/s, NVLink 5 1.8 TB/s (900 per
  direction), host PCIe Gen5 on HGX B200. Source: NVIDIA DGX/HGX B200 datasheets (2024).
- NVIDIA A100 SXM4 80GB / 40GB: 312 TFLOPs, 2.039 / 1.555 TB/s, NVLink 3 600 GB/s (300 per direction), PCIe Gen4.
  Source: NVIDIA A100 datasheet (2021), SXM columns.
- NVIDIA L40S: 362 TFLOPs (733 sparse), 864 GB/s GDDR6, no NVLink (PCIe Gen4 x16 between GPUs).
  Source: NVIDIA L40S datasheet.
- NVIDIA A10G (AWS G5): 70 TFLOPs dense fp16/bf16 as AWS states for the A10G (the A10 card is 125), 600 GB/s,
  PCIe Gen4. Source: AWS EC2 G5 instance documentation; NVIDIA A10 datasheet.
- NVIDIA L4: 121 TFLOPs (242 sparse), 300 GB/s, PCIe Gen4. Source: NVIDIA L4 datasheet.
- NVIDIA V100 SXM2 32GB / 16GB: 125 TFLOPs fp16 tensor, 900 GB/s HBM2, NVLink 2 300 GB/s (150 per direction on
  DGX-1's hybrid cube mesh; DGX-2 uses NVSwitch at the same per-GPU rate), PCIe Gen3. Source: NVIDIA V100 datasheet.
- NVIDIA RTX 4090: 165 TFLOPs fp16/bf16 with fp32 accumulation (330 with fp16 accumulation), 1008 GB/s, no
  NVLink, PCIe Gen4. Source: NVIDIA Ada Lovelace architecture whitepaper, appendix table.
- NVIDIA T4: 65 TFLOPs fp16 tensor, 320 GB/s, PCIe Gen3. Source: NVIDIA T4 datasheet.
- AMD Instinct MI300X: 1307 TFLOPs bf16 dense, 5.3 TB/s, Infinity Fabric 7 links x 64 GB/s = 448 GB/s per GPU to
  its peers, PCIe Gen5. Source: AMD Instinct MI300X datasheet.
- AMD Instinct MI250X, one GCD (the catalog's entry: PyTorch and DeepSpeed see each of the package's two dies as
  a device, one rank each): half of the package's 383 TFLOPs bf16, 3.2 TB/s and 95.7 TFLOPs fp32 matrix, PCIe Gen4.
  Source: AMD Instinct MI250X datasheet (package figures). Infinity Fabric between GCDs, per direction: 200 GB/s
  inside a package, 50 for a ring that leaves it. OLCF's Frontier User Guide (docs.olcf.ornl.gov/systems/
  frontier_user_guide.html, "Frontier Compute Nodes"): "The 2 GCDs on the same MI250X are connected with Infinity
  Fabric GPU-GPU with a peak bandwidth of 200 GB/s. The GCDs on different MI250X are connected with Infinity Fabric
  GPU-GPU in the arrangement shown in the Frontier Node Diagram below, where the peak bandwidth ranges from 50-100
  GB/s based on the number of Infinity Fabric connections between individual GCDs"; one link is "50 GB/sec for a
  16-wide link" (ROCm docs, "AMD Instinct MI250 microarchitecture"); LUMI's documentation (docs.lumi-
  supercomputer.eu/hardware/lumig) gives the same links as 400 and 100 GB/s bidirectional. The node's links, as
  ``rocm-smi --shownodesbw`` reports them on a 4 x MI250 node (huggingface/optimum-amd, docs/source/amdgpu/
  perf_hardware.mdx): 200 GB/s between GCDs 0-1, 2-3, 4-5 and 6-7, 100 between 0-6 and 2-4, 50 between 0-2, 1-3,
  1-5, 3-7, 4-6 and 5-7, none between the others. Every ring over GCDs 0 to k-1 for k from 3 to 8 (ranks fill a
  node's GCDs in order) has a hop over a single 50 GB/s link (over all 8: 8 hops, and only 6 links are faster),
  and a ring step waits for its slowest hop. RCCL runs several rings over different links at once, so a measured
  collective may beat 50; no published RCCL bus bandwidth over one MI250X node was found, and 50, the bound the
  topology gives, is modelled.

Achievable matmul fraction (``matmul_fraction``): the best bf16 matmul rate measured over many shapes divided
by the datasheet peak, from Stas Bekman's "Maximum Achievable Matmul FLOPS comparison table" (ml-engineering,
compute/accelerator/README.md, mamf-finder.py): A100 SXM 85.9-86.9% (revisions of the table), H100 SXM 80.1-80.3%,
B200 77.6%, MI250X 76.7% (one GCD), MI300X 51.4% (torch 2.5.1 + ROCm 6.3 with PYTORCH_TUNABLEOP_ENABLED=1, the
table since January 2025; its first revision, ROCm 6.2, had 60.1%). The V100, which the table does not list: cuBLAS
mixed-precision GEMM on the tensor cores "up to 83 Tflops/s" of the 125 peak, 66.4% (Markidis, Chien, Laure, Peng and
Vetter, "NVIDIA Tensor Core Programmability, Performance & Precision", IPDPS workshops 2018, abstract; the best over
the matrix sizes they ran, CUDA 9). GPUs neither source lists take ``DEFAULT_MATMUL_FRACTION``. These are tensor-core
fractions: a matmul on the CUDA cores (fp32, or bf16 emulated where the GPU has no bf16) has no measured fraction
here and runs at ``DEFAULT_MATMUL_FRACTION`` of the fp32 peak (``Cluster.cuda_core_scale``).

Fused attention kernels (``flash_attention_fraction``): FlashAttention-2, the kernel behind PyTorch SDPA's flash
backend and flash-attn, reaches 50-73% of the A100's peak (Dao, 2023, abstract; forward + backward 55-61% at long
causal sequences, its Figure 4(c, d): 171 and 189 TFLOPs at 16K tokens, head dimension 64 and 128): about the A100's
GEMM rate in the model (0.86 x 0.75 = 0.645), so the A100 needs no separate figure; on the H100 it reaches only 35%
(Shah et al., FlashAttention-3, 2024, abstract), well below the H100's GEMMs, so the attention core of a flash/SDPA
run is costed at that rate there. The first-generation kernels (flash-attn 1.x and its Triton kernel, ``flash1``)
run at ``constants.FLASH1_ATTENTION_SPEED`` (0.43) of FlashAttention-2's rate on the A100 and the H100 alike.

fp32 figures are the datasheet non-tensor FP32 rates (used when neither fp16 nor bf16 is enabled).

Intra-node bandwidth is per GPU and per direction (what a ring step can push to its neighbour). A package of
several devices (``core.hardware.GPU.devices``) may join them faster than it joins packages: its
``intra_node_gbyte_s_across_packages`` is what a ring over devices of more than one package gets. PCIe GB/s per
direction of an x16 link: Gen3 15.75, Gen4 31.5, Gen5 63 (PCI-SIG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Final

from core.findings import brief
from core.hardware import DEFAULT_CPU_RAM_GIB, GPU_BY_NAME, find_gpu
from core.memory.estimate import Allowances
from core.perf.constants import FLASH1_ATTENTION_SPEED


@dataclass(frozen=True)
class GPUPerf:
    """Datasheet performance of one GPU."""

    peak_tflops: float  # dense tensor-core bf16 (fp16 where there is no bf16)
    hbm_gbyte_s: float  # device memory bandwidth
    intra_node_gbyte_s: float  # GPU-to-GPU link, per direction (NVLink/NVSwitch/Infinity Fabric, or PCIe)
    pcie_gen: int  # host link generation (x16)
    fp32_tflops: float  # plain fp32 (CUDA cores; PyTorch keeps TF32 off for matmuls by default)
    matmul_fraction: float | None = None  # best measured tensor-core matmul / datasheet peak; None: not measured
    flash_attention_fraction: float | None = None  # FlashAttention-2 / datasheet peak where below the GEMMs
    #: per direction, the slowest link a ring over devices of several packages crosses; None: as inside a package
    intra_node_gbyte_s_across_packages: float | None = None


PCIE_GBYTE_S: Final = MappingProxyType({3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0})

GPU_PERF: Final = MappingProxyType(
    {
        "NVIDIA H100 80GB": GPUPerf(989.0, 3350.0, 450.0, 5, 67, 0.80, 0.35),
        "NVIDIA H200 141GB": GPUPerf(989.0, 4800.0, 450.0, 5, 67, 0.80, 0.35),
        "NVIDIA B200 180GB": GPUPerf(2250.0, 8000.0, 900.0, 5, 80, 0.776),
        "NVIDIA A100 80GB": GPUPerf(312.0, 2039.0, 300.0, 4, 19.5, 0.86),
        "NVIDIA A100 40GB": GPUPerf(312.0, 1555.0, 300.0, 4, 19.5, 0.86),
        "NVIDIA L40S 48GB": GPUPerf(362.0, 864.0, 31.5, 4, 91.6),
        "NVIDIA A10G 24GB": GPUPerf(70.0, 600.0, 31.5, 4, 31.2),
        "NVIDIA L4 24GB": GPUPerf(121.0, 300.0, 31.5, 4, 30.3),
        "NVIDIA V100 32GB": GPUPerf(125.0, 900.0, 150.0, 3, 15.7, 0.664),
        "NVIDIA V100 16GB": GPUPerf(125.0, 900.0, 150.0, 3, 15.7, 0.664),
        "NVIDIA RTX 4090 24GB": GPUPerf(165.0, 1008.0, 31.5, 4, 82.6),
        "NVIDIA T4 16GB": GPUPerf(65.0, 320.0, 15.75, 3, 8.1),
        "AMD MI300X 192GB": GPUPerf(1307.0, 5300.0, 448.0, 5, 163.4, 0.514),
        "AMD MI250X 128GB": GPUPerf(191.5, 1600.0, 200.0, 4, 47.85, 0.767, intra_node_gbyte_s_across_packages=50.0),
    }
)

#: Matmul fraction of GPUs the MAMF table does not list: the H100's 0.80, the middle of the measured ones.
DEFAULT_MATMUL_FRACTION: Final = 0.80

#: Inter-node network presets: total Gbit/s per node (all NICs of the node together).
NETWORKS: Final = MappingProxyType(
    {
        "1x100G (Ethernet/EDR)": 100.0,
        "1x200G HDR": 200.0,
        "4x100G": 400.0,
        "AWS EFA p4d (4x100G)": 400.0,
        "8x100G (DGX-2 EDR)": 800.0,
        "8x200G HDR (DGX A100)": 1600.0,
        "AWS EFA p5 (32x100G)": 3200.0,
        "8x400G NDR (DGX H100)": 3200.0,
    }
)

#: Default network per GPU when the cluster does not say: the reference system that ships the GPU.
DEFAULT_NETWORK_GBIT_S: Final = MappingProxyType(
    {
        "NVIDIA H100 80GB": 3200.0,
        "NVIDIA H200 141GB": 3200.0,
        "NVIDIA B200 180GB": 3200.0,
        "NVIDIA A100 80GB": 1600.0,
        "NVIDIA A100 40GB": 1600.0,
        "NVIDIA V100 32GB": 800.0,
        "NVIDIA V100 16GB": 800.0,
        "AMD MI300X 192GB": 3200.0,
        "AMD MI250X 128GB": 800.0,
    }
)
FALLBACK_NETWORK_GBIT_S: Final = 100.0  # PCIe-card servers (L40S, A10G, L4, 4090, T4): one 100G NIC

#: DeepSpeedCPUAdam parameter updates per second for a whole node, as DeepSpeed runs it (the optimizer step
#: of the offloaded partition, fp32 gradient unscale and copies included). Measured: Qwen-72B on 4 A100 nodes
#: with ZeRO-3 offload takes about 10 s per optimizer step against 0.2 s without offload
#: (https://github.com/deepspeedai/DeepSpeed/issues/6834, maintainer's reading of the wall_clock_breakdown):
#: 18e9 parameters per node in about 10 s. ``--bind_cores_to_rank`` gains about 1.3x
#: (https://github.com/deepspeedai/DeepSpeed/pull/7474). Override it per cluster when you know yours.
CPU_ADAM_PARAMS_PER_S: Final = 1.8e9

#: NVMe bandwidth per node (GB/s, read and write alike, all drives striped). ZeRO-Infinity (Rajbhandari et al.,
#: SC'21, section 6.1) used DGX-2 nodes with about 25 GB/s of aggregate NVMe read; DeepNVMe blog (2024) shows
#: 8 PCIe Gen4 drives at about 25 GB/s read / 20 write. One modern Gen4 drive is about 6.
NVME_GBYTE_S_DEFAULT: Final = 25.0


def gpu_perf(name: str) -> GPUPerf:
    """Datasheet figures for a catalog GPU; ValueError naming the choices otherwise."""
    perf = GPU_PERF.get(name)
    if perf is None:
        raise ValueError(f"Unknown GPU {name!r}: pick one of {', '.join(GPU_PERF)}.")
    return perf


@dataclass(frozen=True)
class Efficiency:
    """The model's efficiency constants: physically meaningful fractions, the same for every prediction.

    ``calibrate`` fits ``compute`` (and ``link`` when communication dominates) to a measurement.
    """

    #: Fraction of the datasheet tensor-core peak that the GEMMs of a training step reach when they are large
    #: enough to be compute-bound. ``None`` (the default): the GPU's best measured matmul fraction
    #: (``GPUPerf.matmul_fraction``) times ``gemm_fraction``; ``Cluster`` fills it in, ``calibrate`` fits it.
    compute: float | None = None
    #: Fraction of the best-shape matmul rate that a training step's GEMMs reach (forward and the two transposed
    #: backward GEMMs at training shapes, eager PyTorch, wave quantisation and tile tails): whole transformer
    #: layers run at 55-65% of the datasheet peak where the best matmul reaches 80% (Megatron-LM, Narayanan
    #: et al. 2021; MAMF table), i.e. 0.75 of it.
    gemm_fraction: float = 0.75
    #: Fraction of a link's datasheet bandwidth that NCCL collectives and cudaMemcpy reach (NCCL busbw on
    #: NVLink/InfiniBand is 75-90% of the line rate).
    link: float = 0.8
    #: Fraction of the communication that hides behind computation when it is allowed to overlap
    #: (NCCL kernels take SMs from the compute kernels, and the first/last buckets cannot overlap): each second
    #: of hidden communication still costs 1 - overlap seconds. Measured: compute overlapped with communication
    #: runs 18.9% slower on average, 40% at most (arXiv 2507.03114, 'Characterizing Compute-Communication Overlap
    #: in GPU-Accelerated Distributed Deep Learning', abstract; A100, H100, MI250, MI210), i.e. 0.81 (0.60 at
    #: the worst) where a collective spans the compute it overlaps; a GEMM sized to one wave of an H100's SMs ran at
    #: 47% MFU beside an NCCL all-gather against 80% alone, its tail pushed into a second wave (NVIDIA developer
    #: forum, 'Compute-Communication Overlap Causes Severe GEMM Performance Degradation because of Tail Effect').
    #: The model takes the paper's worst case: DeepSpeed's overlapped phases run its own copy and flatten kernels
    #: beside NCCL's, and ZeRO-3 overlaps every gather of a step. It was 0.8 (the average) until 29 Nov 2026; against
    #: the 131 published runs 0.6 gives 9 rows beyond 1.5x instead of 15 and a median error of 11.4% instead of 11.7%
    #: (the ZeRO++ blog's 1K-token bars show the communication nearly adding to the compute). No V100 measurement.
    overlap: float = 0.6
    #: Fixed host-side cost per transformer layer per forward+backward of one micro batch: kernel launches,
    #: Python module calls, autograd bookkeeping (about 40 kernels of 5 microseconds).
    layer_overhead_s: float = 2.0e-4
    #: Extra host-side cost per parameterised module per forward or backward pass under ZeRO-3 (the fetch /
    #: release hooks, their coordinator trace and stream synchronisations). No published measurement; measured on
    #: the CPU (scripts/zero3_hook_cost.py, real deepspeed.initialize, DeepSpeed 0.19.8): the Python part alone is
    #: ~300 microseconds per module per forward and ~230 per backward over stage 2 on a slow 2-core cloud VM core
    #: (a plain Linear(16, 16) forward 13.6 microseconds there, ~5 on a fast host core), i.e. ~120-150 on a fast
    #: host before the GPU's stream synchronisations and launches: 150 is the fast end of that range.
    zero3_module_overhead_s: float = 1.5e-4
    #: Host-side cost per parameter tensor of ZeRO's gradient hook in each backward (stages 2 and 3, and stage 1
    #: with overlap_comm): the copy into the reduce bucket and the partition bookkeeping run in Python on the
    #: autograd thread, in series with the backward kernels' launches. The DeepSpeedExamples autotuning READMEs
    #: (16 V100, same micro batch) show ZeRO-2 slower than ZeRO-1 by 148, 154 and 161 microseconds per parameter
    #: tensor for GPT2-xl, -large and -medium: the same order as ``zero3_module_overhead_s``.
    grad_hook_overhead_s: float = 1.5e-4
    #: Fixed cost of one collective call (NCCL launch and ring/tree latency: tens of microseconds in a node,
    #: more across nodes); it makes small buckets and per-module ZeRO-3 fetches cost more than their bytes.
    collective_latency_s: float = 5.0e-5
    #: Latency of one step of a ring collective (a ring over N GPUs takes N-1 steps per all-gather or
    #: reduce-scatter, 2(N-1) per all-reduce): NCCL's own tuning model (src/graph/tuning.cc, hwLat, Ring/Simple,
    #: the protocol of large messages) charges 5.7 microseconds per NVLink or PCIe hop and 6.6 per network hop.
    #: At hundreds of GPUs it makes every small per-module ZeRO-3 all-gather cost milliseconds.
    ring_hop_latency_s: float = 6.0e-6

    def __post_init__(self) -> None:
        # a fraction beyond 1 makes hidden communication negative, a negative one makes it vanish, 0 divides
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "compute" and value is None:
                continue
            number = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
            if f.name.endswith("_s"):
                if not number or value < 0:
                    raise ValueError(f"Efficiency.{f.name} must be a finite number of seconds >= 0, got "
                                     f"{brief(value)}.")
            elif not number or not (0 <= value <= 1 if f.name == "overlap" else 0 < value <= 1):
                span = "between 0 and 1" if f.name == "overlap" else "above 0 and at most 1"
                raise ValueError(f"Efficiency.{f.name} must be a fraction {span}, got {brief(value)}"
                                 + (" (None: the GPU's default)." if f.name == "compute" else "."))


#: The largest value a Cluster's rate or size field takes (Gbit/s, GB/s, TFLOPs, GiB, parameters/s).
_LARGEST_RATE = 1e15


@dataclass(frozen=True)
class Cluster:
    """Identical nodes of identical GPUs. ``None`` fields take the catalog default of ``gpu``.

    - ``gpu``: a name from ``core.hardware`` (``gpu_names()``).
    - ``inter_node_gbit_s``: total network Gbit/s per node (all NICs; see ``NETWORKS``).
    - ``intra_node_gbyte_s``: GPU-to-GPU GB/s per GPU per direction inside a node (every ring's, inside a package
      of several devices or across packages).
    - ``pcie_gbyte_s``: host-to-GPU GB/s per GPU per direction.
    - ``nvme_gbyte_s``: NVMe GB/s per node (offload to nvme).
    - ``cpu_adam_params_per_s``: CPU optimizer updates per second per node (offload_optimizer).
    - ``peak_tflops`` / ``hbm_gbyte_s``: override the datasheet (clocks, power caps).
    - ``cpu_ram_gib`` / ``nvme_gib``: per node, for the memory check (None: ``core.hardware.DEFAULT_CPU_RAM_GIB``
      of RAM, NVMe unlimited; ``nvme_gib`` 0: no NVMe, as the CLI and the app's Start page default to).
    - ``efficiency``: the model's constants (``calibrate`` returns a cluster with fitted ones).
    - ``memory_allowances``: the memory model's allowances used by ``recommend`` (``calibrate`` fits them to a
      measured peak).
    """

    gpu: str
    gpus_per_node: int = 8
    nodes: int = 1
    inter_node_gbit_s: float | None = None
    intra_node_gbyte_s: float | None = None
    pcie_gbyte_s: float | None = None
    nvme_gbyte_s: float | None = None
    cpu_adam_params_per_s: float | None = None
    peak_tflops: float | None = None
    hbm_gbyte_s: float | None = None
    cpu_ram_gib: float | None = None
    nvme_gib: float | None = None
    efficiency: Efficiency = field(default_factory=Efficiency)
    memory_allowances: Allowances = field(default_factory=Allowances)

    def __post_init__(self) -> None:
        if find_gpu(self.gpu) is None or self.gpu not in GPU_PERF:
            raise ValueError(f"Unknown GPU {self.gpu!r}: pick one of {', '.join(GPU_BY_NAME)}.")
        if self.efficiency.compute is None:  # the GPU's achievable matmul fraction x the training-GEMM fraction
            fraction = self.perf.matmul_fraction or DEFAULT_MATMUL_FRACTION
            object.__setattr__(self, "efficiency",
                               replace(self.efficiency, compute=fraction * self.efficiency.gemm_fraction))
        for name in ("gpus_per_node", "nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Cluster.{name} must be a whole number >= 1, got {value!r}.")
        for f in fields(self):
            value = getattr(self, f.name)
            # beyond _LARGEST_RATE no machine is built, and 10**400 or 1e308 GiB overflow the arithmetic
            bad = isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= _LARGEST_RATE
            if f.name == "nvme_gib" and value == 0 and not isinstance(value, bool):
                continue  # no NVMe: offloading to it does not fit
            if f.name.endswith(("_s", "_tflops", "_gib")) and value is not None and bad:
                raise ValueError(f"Cluster.{f.name} must be a positive number up to {_LARGEST_RATE:g} or None, got "
                                 f"{brief(value)}" + (" (0: no NVMe)." if f.name == "nvme_gib" else "."))

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def perf(self) -> GPUPerf:
        return gpu_perf(self.gpu)

    # resolved values (the catalog default where the field is None)
    @property
    def compute_efficiency(self) -> float:
        """``efficiency.compute`` as resolved for this GPU."""
        return self.efficiency.compute or DEFAULT_MATMUL_FRACTION * self.efficiency.gemm_fraction

    @property
    def cuda_core_scale(self) -> float:
        """What ``compute_efficiency`` is multiplied by for a matmul on the CUDA cores (fp32, emulated bf16):
        ``efficiency.compute`` is a fraction of the tensor-core peak, built from (or fitted against) the GPU's
        tensor-core matmul fraction, while a CUDA-core matmul reaches ``DEFAULT_MATMUL_FRACTION`` of the fp32 peak
        (no GPU's fp32 matmul fraction is measured here); 1 where the two fractions are the same."""
        return DEFAULT_MATMUL_FRACTION / (self.perf.matmul_fraction or DEFAULT_MATMUL_FRACTION)

    def attention_efficiency(self, attention: str) -> float:
        """Fraction of the peak the attention core (QK^T, softmax, AV) runs at for an attention implementation:
        eager attention and FlashAttention-2 / SDPA as the GEMMs, or FlashAttention-2's own measured rate where that
        is lower (the H100, scaled as ``efficiency.compute`` is scaled from the catalog's, e.g. by ``calibrate``); the
        first-generation kernels (``flash1``) at ``FLASH1_ATTENTION_SPEED`` of that."""
        eff = self.compute_efficiency
        if attention == "eager":
            return eff
        if self.perf.flash_attention_fraction:
            # measured at the catalog's GEMM rate: a compute efficiency set (or calibrated) above or below it moves
            # the kernel's rate by as much (at most the peak)
            relative = eff / ((self.perf.matmul_fraction or DEFAULT_MATMUL_FRACTION) * self.efficiency.gemm_fraction)
            eff = min(eff, 1.0, self.perf.flash_attention_fraction * relative)
        return eff * FLASH1_ATTENTION_SPEED if attention == "flash1" else eff

    @property
    def peak_flops(self) -> float:
        return (self.peak_tflops or self.perf.peak_tflops) * 1e12

    @property
    def hbm_bytes_s(self) -> float:
        return (self.hbm_gbyte_s or self.perf.hbm_gbyte_s) * 1e9

    @property
    def intra_bytes_s(self) -> float:
        """GPU-to-GPU bytes/s per direction of a ring over all ``gpus_per_node`` devices of a node (what
        ``resolved()`` reports)."""
        return self.intra_ring_bytes_s(self.gpus_per_node)

    def intra_ring_bytes_s(self, devices: int) -> float:
        """GPU-to-GPU bytes/s per direction of a ring spanning ``devices`` consecutive devices of a node: the link
        inside a package while they fit in one (``core.hardware.GPU.devices``, counted from a package's first
        device), the GPU's ``intra_node_gbyte_s_across_packages`` beyond; ``intra_node_gbyte_s`` overrides both."""
        if self.intra_node_gbyte_s:
            return self.intra_node_gbyte_s * 1e9
        across = self.perf.intra_node_gbyte_s_across_packages
        if across is not None and devices > GPU_BY_NAME[self.gpu].devices:
            return across * 1e9
        return self.perf.intra_node_gbyte_s * 1e9

    @property
    def inter_bytes_s(self) -> float:
        gbit = self.inter_node_gbit_s or DEFAULT_NETWORK_GBIT_S.get(self.gpu, FALLBACK_NETWORK_GBIT_S)
        return gbit * 1e9 / 8

    @property
    def pcie_bytes_s(self) -> float:
        return (self.pcie_gbyte_s or PCIE_GBYTE_S[self.perf.pcie_gen]) * 1e9

    @property
    def nvme_bytes_s(self) -> float:
        return (self.nvme_gbyte_s or NVME_GBYTE_S_DEFAULT) * 1e9

    @property
    def cpu_adam_rate(self) -> float:
        return self.cpu_adam_params_per_s or CPU_ADAM_PARAMS_PER_S

    def resolved(self) -> dict[str, float]:
        """Every rate the prediction uses, with defaults filled in (for display: "what it assumed")."""
        return {
            "peak_tflops": self.peak_flops / 1e12,
            "hbm_gbyte_s": self.hbm_bytes_s / 1e9,
            "intra_node_gbyte_s": self.intra_bytes_s / 1e9,
            "inter_node_gbit_s": self.inter_bytes_s * 8 / 1e9,
            "pcie_gbyte_s": self.pcie_bytes_s / 1e9,
            "nvme_gbyte_s": self.nvme_bytes_s / 1e9,
            "cpu_adam_params_per_s": self.cpu_adam_rate,
        }

    @property
    def node_cpu_ram_gib(self) -> float:
        """The CPU RAM per node the memory check counts: ``cpu_ram_gib``, else the catalog's default."""
        return self.cpu_ram_gib if self.cpu_ram_gib is not None else DEFAULT_CPU_RAM_GIB

    def described(self) -> dict[str, Any]:
        """What the cluster is and every rate of ``resolved()``: the GPU, its memory, the GPU and node counts, and
        the CPU RAM and NVMe per node as the memory check counts them (``nvme_gib_per_node`` None: unlimited). What
        a plan's hours and cost or a prediction on it assumed, for ``--format json``."""
        return {
            "gpu": self.gpu, "gpu_memory_gib": GPU_BY_NAME[self.gpu].memory_gib, "gpus_per_node": self.gpus_per_node,
            "nodes": self.nodes, "total_gpus": self.total_gpus,
            "cpu_ram_gib_per_node": self.node_cpu_ram_gib,
            "nvme_gib_per_node": self.nvme_gib,
            **self.resolved(),
        }
