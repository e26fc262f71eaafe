"""The timing model: how long a pass takes, and the fit that makes the roofline honest.

- `passes`      the pass model (bytes and FLOPs of a pass of n tokens at context c, its time
                with a machine's efficiencies), decode (`decode_report`) and prefill
                (`prefill_report`) on one pool of memory
- `efficiency`  `Efficiency` (a machine's fitted parameters), the levels of groups a machine
                belongs to (`FIT_LEVELS`, `fit_keys`) and the shipped fit (`data/timing.yaml`)
- `fit`         the hierarchical fit itself (robust least squares over the groups)
- `calibrate`   published runs or a user's llama-bench JSON -> fitted efficiencies
- `accuracy`    the error to expect of an estimate (`data/accuracy.yaml`)

`passes` is pure (no I/O) like `costs`, which composes its passes into answers (split systems,
trace, spec, budget, compare, serve). `fit` and `calibrate` are imported only by the
`calibrate` command and the benchmarks, never by a prediction.
"""
