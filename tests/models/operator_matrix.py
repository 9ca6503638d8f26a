"""The operator matrix as one model (armgen.model.operator_matrix): each row's case a branch with its own
inputs and output, so one program, one firmware build per CPU, proves every row."""

from armgen.model.operator_matrix import matrix_model

model, example_inputs = matrix_model()
