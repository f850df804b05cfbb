"""The values and the IR everything else stands on: dtypes and errors, Tensor and
Variable, abstract values and sizes, the IR and its names, the Primitive record and
`bind`, and what each thread is recording."""
