// The graph's fault record, bound at FAULT_BINDING. A kernel that meets an input PyTorch
// would raise on (an index out of range) writes a safe result (zeros) and records the first
// such event here; the runtime reads the record after the execute and fails it, naming the
// node, the value and the limit. Words: [tag = node_id + 1, value, limit, spare].
layout(set = 0, binding = FAULT_BINDING) buffer Faults { uint fault[4]; };

void record_fault(uint tag, int value, uint limit) {
  if (atomicCompSwap(fault[0], 0u, tag) == 0u) {
    fault[1] = uint(value);
    fault[2] = limit;
  }
}
