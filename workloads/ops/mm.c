/* mm: matrix products (a linear layer's forward and both gradients) as the 1 x 1
 * convolutions whose field is the batch (ops.h), so that the convolution's planner and
 * builder serve them: the planner splits the batch (the field's columns), the input
 * features (input channels, partial sums reduced across tiles) and the output features
 * (output channels in groups of 16). The only work of its own is to read the matrices
 * through views: a matrix [rows][cols] is held as an activation [rows][cols][1][1] and read
 * as [1][cols][1][rows] (transposed, the rows the field) or [1][rows][1][cols]. Left out:
 * poplin's matmul-specific plans (its serial splits and grouped matrix products), which a
 * network of this size does not need. */
#include "workloads/ops/ops.h"

op_conv_shape op_mm_shape(op_mm_pass pass, uint32_t M, uint32_t K, uint32_t N, uint32_t acc)
{
    /* {B, cin, h, w, cout, k, stride, pad, form, nobias, acc} */
    switch (pass) {
    case OP_MM_FWD: return (op_conv_shape){1, K, 1, M, N, 1, 1, 0, OP_W_FWD, 0, 0};
    case OP_MM_DX: return (op_conv_shape){1, N, 1, M, K, 1, 1, 0, OP_W_DX, 1, 0};
    default: return (op_conv_shape){1, M, 1, K, N, 1, 1, 0, OP_W_DX, 1, acc};
    }
}

/* Index d of the view is index map[d] of [rows][cols][1][1]: transposed, [1][cols][1][rows]
 * (the one-wide dimensions 2 and 3 of the matrix fill the view's 0 and 2); as is,
 * [1][rows][1][cols]. */
static const uint8_t MAP_T[OP_DIMS] = {2, 1, 3, 0}, MAP_N[OP_DIMS] = {2, 0, 3, 1};

op_act op_mm_in(const op_act *matrix, op_mm_pass pass)
{
    return op_act_view(matrix, pass == OP_MM_DW ? MAP_N : MAP_T);
}

op_act op_mm_in_t(const op_act *t, op_mm_pass pass)
{
    static const uint8_t swap[OP_DIMS] = {0, 3, 2, 1}, same[OP_DIMS] = {0, 1, 2, 3};
    return op_act_view(t, pass == OP_MM_DW ? swap : same);
}

/* The inverse maps: [rows][cols][1][1] read from [1][cols][1][rows] or [1][rows][1][cols]. */
static const uint8_t INV_T[OP_DIMS] = {3, 1, 0, 2}, INV_N[OP_DIMS] = {1, 3, 0, 2};

op_act op_mm_out(const op_act *y, op_mm_pass pass)
{
    return op_act_view(y, pass == OP_MM_DW ? INV_N : INV_T);
}
