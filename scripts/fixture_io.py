"""The fixture layout of tests/fixtures/ (io.json, caseN_inK / caseN_outK .bin + .npy), shared
by the export scripts in this folder."""

import hashlib
import json
import os

import numpy

# io.json fields for programs with int8 dynamic activations (read by the project's tests).
REFERENCE_TOL = {
    "f64_reference_tol": 3e-2,
    "f64_reference_note": "int8 per-token activation quantization is discontinuous: the f64 "
    "reference interpreter (graph_reference) can round an activation to a neighbouring int8 "
    "step where fp32 PyTorch does not, so it is compared with this tolerance; the GPU run "
    "keeps atol / rtol",
}


def tensor_entry(d, name, t):
    """Write tensor `t` as `d/name.bin` (raw little-endian) and `d/name.npy`; its io.json entry."""
    t = t.detach().contiguous()
    data = t.numpy().tobytes()
    with open(os.path.join(d, name + ".bin"), "wb") as f:
        f.write(data)
    numpy.save(os.path.join(d, name + ".npy"), t.numpy())
    return {
        "file": name + ".bin",
        "npy": name + ".npy",
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
        "nbytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def write_io(d, name, description, cases, tol, reference, dynamic_activations):
    """io.json of fixture `name` in `d`: `cases` (inputs / outputs entries, in call order)."""
    io = {
        "name": name,
        "description": description,
        "method": "forward",
        "byte_order": "little",
        "atol": tol,
        "rtol": tol,
        **(REFERENCE_TOL if dynamic_activations else {}),
        "reference": reference,
        "cases": cases,
    }
    with open(os.path.join(d, "io.json"), "w") as f:
        json.dump(io, f, indent=1)
