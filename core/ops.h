/* ops.h - tensor operations as tj sees them: functions, methods, operators
 * and attributes on values, with the autograd tape recorded here.
 *
 * This layer turns values into tensor.h calls (Python scalars become
 * wrapped 0-d tensors, lists become tensors where PyTorch accepts them),
 * records a tape node when an input requires grad, and is the single place
 * the tracer (next issue) will intercept: every tensor operation a program
 * can perform goes through one of the entry points below, and every op has
 * one row in ops.def.
 */
#ifndef TJ_OPS_H
#define TJ_OPS_H

#include "builtin.h"
#include "code.h"
#include "tensor.h"

/* Module-level names that tj programs see: tensor zeros ones full arange eye
 * randn rand manual_seed, every pointwise/reduction/linear/shape function,
 * where clamp softmax log_softmax matmul linear cat stack maximum minimum,
 * ext_sort ext_cumsum ext_clip, and the dtypes float32 float64 int64 bool
 * are NOT here (the VM defines dtype names). NULL-terminated. */
extern const struct builtin_def ops_functions[];

/* a + b etc. when at least one side is a tensor (the other may be an int,
 * float, bool or tensor; anything else: "unsupported operand type(s) for +:
 * 'Tensor' and 'str'"). */
value ops_binary(enum vm_binop op, value a, value b);
/* comparisons lt le gt ge eq ne with a tensor side: a bool tensor */
value ops_compare(enum vm_cmpop op, value a, value b);
value ops_unary_neg(value a);
value ops_getattr(value self, struct str *name); /* attributes (shape dtype ndim T grad requires_grad) and bound methods */
value ops_subscript(value self, value index);    /* x[i], x[1:3], x[:, 0], x[..., None] */
int ops_truth(value self, bool *out);            /* bool(t): one element, else "Boolean value of Tensor with more than one value is ambiguous" */
value ops_item(value self);                      /* int or float (bool for bool tensors) */
/* abs(t), round(t), max(t), min(t), int(t), float(t), len(t) */
value ops_builtin_abs(value t);
value ops_builtin_round(value t);

#endif
