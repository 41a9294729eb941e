"""The machine a run measured on: its description, whether it was idle, and its clocks.

* :func:`environment`: GPU, SM count, L2, driver, CUDA, library versions, git commit.
* :func:`idle_utilization`: NVML's GPU utilization over about a second (another process using
  the GPU makes every figure slower, and nothing in the figures would say so).
* :class:`PersistingL2`: the L2 an implementation may set aside for "persisting" accesses
  (``cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)`` plus an access-policy window): lines
  held there survive the cold-cache flush, so a cold figure would secretly be a warm one.
  The engine reads the limit around every variant's checked and warm-up calls.
* :class:`ClockWarmer` (``--clock-burst on``; off by default): on a GPU whose idle clocks
  ramp up slowly, the first microseconds-long kernels after a pause run at the low clock, and
  a 200 ms burst of large FP16 GEMMs before each visit (unless one ended within the last
  250 ms) brings them up. Never inside a timed region or a capture. On the H200 the course
  measures on it does harm, not good (``results/h200/clock-probe.log``,
  ``all-burst-{on,off}.json``): a rested GPU runs a 1024 x 1024 softmax at its steady speed
  from the first millisecond, while right after a burst the same kernel is 52% slower, and
  still 26-33% slower 250 ms to 5 s later at full SM clock, so with bursts small cases read up
  to 33% slow and GEMM medians 10% slow with wide spreads. Hence the default; the clock probe
  is how a learner decides for another GPU.
"""

from __future__ import annotations

import ctypes
import platform
import shutil
import statistics
import subprocess
import time

import torch

from learning.report.fingerprint import REPO_ROOT

BURST_MS = 200.0
REWARM_GAP_MS = 250.0
BURST_GEMM_SIZE = 8192  # one FP16 GEMM ~1.5 ms on an H200: enough to hold the clocks up
UTILIZATION_WARNING_PERCENT = 10.0


class PersistingL2:
    """The current CUDA context's persisting-L2 set-aside, through the driver API (libcuda).

    ``bytes()`` is ``None`` where the driver cannot be asked (no libcuda, no context): the
    guard then guards nothing, and says so in the report's warnings.
    """

    LIMIT = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE

    def __init__(self) -> None:
        self.found = 0  # the set-aside the run found (put back at its end)
        self.baseline = 0  # the set-aside during the run (0 once the engine has emptied it)
        try:
            self._cuda = ctypes.CDLL("libcuda.so.1")
        except OSError:
            self._cuda = None

    def bytes(self) -> int | None:
        if self._cuda is None:
            return None
        value = ctypes.c_size_t(0)
        status = self._cuda.cuCtxGetLimit(ctypes.byref(value), self.LIMIT)
        return value.value if status == 0 else None

    def restore(self, size: int) -> None:
        """Put the set-aside back to ``size`` and drop every line marked persisting."""
        if self._cuda is not None:
            self._cuda.cuCtxSetLimit(self.LIMIT, ctypes.c_size_t(size))
            self._cuda.cuCtxResetPersistingL2Cache()


def _git(*args: str) -> str | None:
    if shutil.which("git") is None:
        return None
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def nvml_handle():
    import pynvml

    pynvml.nvmlInit()
    index = torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    location = [getattr(properties, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
    if all(isinstance(part, int) for part in location):
        # The same GPU as torch's, whatever CUDA_VISIBLE_DEVICES renumbered.
        domain, bus, slot = location
        try:
            return pynvml, pynvml.nvmlDeviceGetHandleByPciBusId(
                f"{domain:08x}:{bus:02x}:{slot:02x}.0"
            )
        except Exception:
            pass
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)


def _driver_version() -> str | None:
    try:
        pynvml, _ = nvml_handle()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        text = _nvidia_smi("driver_version")
        return text.splitlines()[0].strip() if text else None


def _nvidia_smi(field: str) -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def environment(device: str) -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:  # pragma: no cover - triton is a hard dependency
        triton_version = None
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain")
    description = {
        "gpu_name": None,
        "sm_count": None,
        "l2_bytes": None,
        "driver": None,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton_version,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "git_commit": commit.strip() if commit else None,
        "git_dirty": bool(status.strip()) if status is not None else None,
    }
    if device == "cuda":
        properties = torch.cuda.get_device_properties(torch.cuda.current_device())
        description.update(
            gpu_name=properties.name,
            sm_count=properties.multi_processor_count,
            l2_bytes=getattr(properties, "L2_cache_size", None),
            driver=_driver_version(),
            memory_bytes=properties.total_memory,
        )
    return description


def _utilization_reader():
    """A function returning the GPU's utilization percent now, and the method's name."""
    try:
        pynvml, handle = nvml_handle()
        return (lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)), "nvml"
    except Exception:
        pass
    if _nvidia_smi("utilization.gpu") is not None:
        index = torch.cuda.current_device()

        def read() -> float:
            lines = (_nvidia_smi("utilization.gpu") or "").split()
            return float(lines[index] if index < len(lines) else lines[0])

        return read, "nvidia-smi"
    return None, None


def idle_utilization(device: str, seconds: float = 1.0, settle_s: float = 0.0) -> dict:
    """GPU utilization percent while this process is idle: the median of ~10 readings."""
    if device != "cuda":
        return {"value": None, "method": None, "reason": "no GPU: the run used the CPU interpreter"}
    read, method = _utilization_reader()
    if read is None:
        return {"value": None, "method": None, "reason": "neither NVML nor nvidia-smi is available"}
    readings = []
    try:
        torch.cuda.synchronize()
        time.sleep(settle_s)  # NVML's window may still hold this process's last kernels
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            readings.append(read())
            time.sleep(seconds / 10)
    except Exception as error:
        return {"value": None, "method": method, "reason": f"reading failed: {error}"}
    return {"value": statistics.median(readings), "method": method, "reason": None}


class ClockWarmer:
    """Runs a GEMM burst before a visit unless one ended less than ``rewarm_gap_ms`` ago."""

    def __init__(
        self, enabled: bool, burst_ms: float = BURST_MS, rewarm_gap_ms: float = REWARM_GAP_MS
    ):
        self.enabled = enabled
        self.off_note = "no GEMM bursts: a CPU interpreter run"
        self.burst_ms = burst_ms
        self.rewarm_gap_ms = rewarm_gap_ms
        self.bursts_run = 0
        self._last_end: float | None = None
        self._operands = None

    def burst(self) -> None:
        if self._operands is None:
            size = BURST_GEMM_SIZE
            # no random numbers: a variant whose capture failed can leave CUDA's generator
            # marked as capturing, and the burst must still run
            a = torch.full((size, size), 0.5, device="cuda", dtype=torch.float16)
            self._operands = (a, a.clone(), torch.empty_like(a))
        a, b, c = self._operands
        end = time.perf_counter() + self.burst_ms / 1e3
        while time.perf_counter() < end:
            for _ in range(4):
                torch.mm(a, b, out=c)
            torch.cuda.synchronize()
        self.bursts_run += 1
        self._last_end = time.perf_counter()

    def before_visit(self) -> None:
        if not self.enabled:
            return
        if (
            self._last_end is not None
            and (time.perf_counter() - self._last_end) * 1e3 < self.rewarm_gap_ms
        ):
            return
        self.burst()

    def record(self) -> dict:
        if not self.enabled:
            return {
                "burst_ms": None,
                "rewarm_gap_ms": None,
                "bursts_run": 0,
                "note": self.off_note,
            }
        return {
            "burst_ms": self.burst_ms,
            "rewarm_gap_ms": self.rewarm_gap_ms,
            "bursts_run": self.bursts_run,
        }
