/* mnet: the tutorial's MNIST network as a graph (workloads/graph/graph.h) on one simulated
 * IPU, trained and tested for real from the host's infeed (docs/mnist.md, "The simulated
 * run").
 *
 * Training: one device program for the whole run, as PopTorch runs one per host call: for
 * each weight update, G times { stream in a micro-batch of images and labels, forward, loss,
 * backward, accumulate gradients }, then the gradients scaled by 1/G and the AdamW step on
 * the tiles that hold the parameters; the loss and the logits (the predictions) go back
 * through the outfeed after every micro-batch (OutputMode.All) or once a host call (Final).
 * The host feeds the micro-batches in the reference trainer's order (workloads/mnist/feed.h),
 * so both see the same data; it reads the outfeed and reports each host call as the
 * reference does (mref_progress), with the simulated cycle the call ended at.
 * Test: the forward pass only, batches of the test batch size, the logits streamed out.
 * Parameters are the reference's flat vector (mref.h: MREF_NPARAMS floats, state_dict order),
 * so weights move between the two as they are. Nothing here prints. */
#ifndef IPUSIM_MNIST_MNET_H
#define IPUSIM_MNIST_MNET_H

#include <stdint.h>

#include "base/err.h"
#include "hw/engine.h"
#include "host/system.h"
#include "hw/machine.h"
#include "workloads/graph/graph.h"
#include "workloads/graph/pipe.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/mref.h"
#include "workloads/ops/ops.h"

/* The images in the infeed: normalised fp32 (784 words an image); their bytes (196 words),
 * normalised on the device by norm_u8 bit for bit as the host; or the host's normalised fp32
 * rounded to IEEE binary16, two to a word (392 words), widened on the device by f16_to_f32. */
typedef enum mnet_dtype { MNET_FP32, MNET_U8, MNET_FP16 } mnet_dtype;

/* "fp32", "u8", "fp16". */
const char *mnet_dtype_name(mnet_dtype d);

/* How the layers are mapped onto tiles: a sample a tile for the convolutions (the sample
 * tiles), or the convolutions' forward planned over the whole IPU by the operation library's
 * planner (workloads/ops/ops.h, docs/planning.md). */
typedef enum mnet_mapping { MNET_MAP_SAMPLE, MNET_MAP_PLANNED } mnet_mapping;

typedef struct mnet_cfg {
    const mspec *net;   /* the network's table: NULL or mspec_tutorial(), the tutorial's own
                            * graph (every mode below); another, built from its table on one
                            * IPU (gnet.h: gnet_mnet) */
    mref_cfg run;       /* epochs, batch, gradient accumulation, device iterations, test batch,
                        * AdamW, seed: as the reference trainer */
    mach m;             /* the machine (its first IPU is used) */
    unsigned threads;   /* host threads (0: the online CPUs) */
    uint32_t depth;     /* the infeed's and outfeed's buffering depth (the tutorial: 3) */
    strm_mode out_mode; /* what the outfeed returns of a host call's micro-batches (their
                            * loss and logits): STRM_ALL every one (OutputMode.All), STRM_FINAL
                            * the last, STRM_EVERYN every out_n-th, STRM_SUM their sum */
    uint32_t out_n;     /* STRM_EVERYN: N (a divisor of G, or a multiple dividing a call) */
    /* the IPU of each block: the tutorial's B1..B4 (conv1, conv2, layer3, layer4 and the
     * loss), all 0 on one IPU, 0, 1, 2, 3 over four; a table's blocks (up to eight) */
    uint32_t stage_ipu[MSPEC_MAX_BLOCKS];
    uint32_t max_tiles; /* 0: the whole IPU; else the graph may use only tiles 0..max_tiles-1 */
    mnet_dtype dtype;   /* the images in the infeed (default MNET_FP32) */
    uint32_t log_steps; /* record the release cycles of the first log_steps program steps
                         * (eng_sync_log; gr_exe_steps names them); 0: none */
    sys_ctl ctl;        /* the superstep limit, a stop flag and a heartbeat (zero: none) */
    struct rank_comm *ranks; /* the run's MPI ranks (base/rank.h); NULL: this process alone */
    host_cfg host;           /* the infeed's host: data loaders, the time to prepare one image, its
                            * distribution and seed, the callback (mnet_host_default); its depth
                            * is `depth`, its buffers the micro-batches */
    sim_time drain_ps;       /* the outfeed's host: time to consume one buffer (default 0) */
    int pipelined;           /* 1: the blocks' IPUs are pipeline stages (stage_ipu 0.. in order,
                            * each IPU a stage); 0: one micro-batch at a time (sharded) */
    pipe_kind schedule;      /* pipelined: grouped (default), interleaved, sequential */
    int recompute;           /* pipelined training: stash only each stage's input and recompute
                            * its forward before the backward (PopTorch's default) */
    uint32_t test_iters;     /* pipelined test pass: micro-batches per pipeline run (the
                            * tutorial's inference device iterations, 100) */
    uint32_t replicas;       /* R copies of the (pipelined, sharded or one-IPU) model, replica r
                            * on IPUs r x N.. (N: the IPUs of one); each update the replicas'
                            * gradients are all-reduced over the IPU-Links (gr_all_reduce), so a
                            * host call is batch x G x device iterations x R images, replica r
                            * taking micro-batches rG .. rG + G - 1 of each update's GR */
    uint32_t io_tiles;       /* I/O tiles on the IPU taking the images (its last io_tiles tiles):
                            * each micro-batch lands there while the compute tiles work on the
                            * previous one, then is handed over on-chip; 0: none */
    mnet_mapping mapping;    /* the layers' mapping onto tiles (default MNET_MAP_SAMPLE) */
    double mem_prop;         /* planned: the available memory proportion, the share of a tile's
                            * SRAM a plan may take as working memory (default OP_AVAIL_DEFAULT,
                            * PopLibs' availableMemoryProportion) */
    int offload;             /* 1: the optimiser state (AdamW's m and v) lives in remote buffers
                            * (MNET_RB_M, MNET_RB_V: host memory, starting zeroed), read in
                            * before each AdamW step and written back after it (the tutorial's
                            * --offload-optimiser); 0: on the parameters' tiles, always live */
} mnet_cfg;

/* Defaults: the tutorial's run on a Mk2 IPU, depth 3, OutputMode.All, 1 us an image. */
int mnet_defaults(mnet_cfg *c, err *e);
/* The infeed's host by default: host_cfg_default (1 loader, fixed times, seed 1, callback
 * 5 us) with 1 us to prepare an image (a normalised 28 x 28 image from host memory). */
host_cfg mnet_host_default(void);

/* The tutorial's --strategy sharded, as PopTorch runs ShardedExecution: gradient accumulation
 * 1 in the model, the micro-batch being batch x G (the images the data loader gives a
 * device iteration), so that a host call takes the same images and makes the same weight
 * updates as pipelined. The blocks' IPUs (stage_ipu) stay as they are; one micro-batch
 * passes them one IPU after another. The mean loss and gradient over B x G images equal the
 * mean over G micro-batches of B in exact arithmetic; in fp32 the sums go in another order
 * (docs/pipelining.md, Sharded). */
void mnet_as_sharded(mnet_cfg *c);

/* One host call's result, as the reference reports it, and when it ended on the device. */
typedef struct mnet_call {
    mref_progress p;    /* loss: mean of the outfed micro-batch losses; accuracy: percent of
                         * their images whose largest logit is the label */
    uint64_t end_cycle; /* the device cycle at which the call ended: the release of the sync
                         * of every IPU with the host that ends its program (mnet_loop) */
} mnet_call;

/* One planned operation of a run: its name (its compute sets are "<name>.amp" and so on) and
 * the pass it computes ("forward", "input gradient"). */
#define MNET_MAX_PLANS (3 * MSPEC_MAX_LAYERS)
typedef struct mnet_plan {
    char name[MSPEC_NAME]; /* "conv2", "conv2.dx" */
    const char *pass;      /* a static string */
    uint32_t ipu;
    op_conv_shape shape;
    op_conv_part part;
    op_conv_est est;
} mnet_plan;

/* The network's layers as a run reports the tiles each uses: layer k's compute sets are those
 * named mnet_layer_name(k), then a dot and anything (its forward and gradients, planned or
 * not; gr_exe_layer_tiles). */
enum { MNET_NLAYERS = 7 };
const char *mnet_layer_name(int k);

/* A pipelined run's stages (stages 0: not pipelined): per IPU, its micro-batches in flight,
 * the slots its stash keeps (0: none, the working buffers hold the one in flight) and the
 * stash's bytes on the IPU. */
typedef struct mnet_pipe_info {
    uint32_t stages;
    pipe_kind schedule; /* the pipeline's schedule (mnet_cfg.schedule) */
    uint32_t micro;     /* micro-batches in one pipeline run: G (the test pass: its device
                     * iterations, the last run's fewer) */
    uint32_t in_flight[MSPEC_MAX_BLOCKS], slots[MSPEC_MAX_BLOCKS];
    uint64_t stash_bytes[MSPEC_MAX_BLOCKS];
    /* mapping planned: the planned operations (the forward of conv1, conv2, layer3 and layer4;
     * in training conv2's input and weight gradients and the linear layers' input and weight
     * gradients),
     * each its IPU, shape, partition and the planner's estimate; nplans 0 with the mapping per
     * sample */
    uint32_t nplans;
    mnet_plan plan[MNET_MAX_PLANS];
    /* per layer (mnet_layer_name) and IPU: the tiles holding its vertices */
    uint32_t layer_tiles[MNET_NLAYERS][MSPEC_MAX_BLOCKS];
    /* per IPU: the tiles holding a vertex of any convolution's or linear layer's compute sets
     * (their forward and gradients; named after the layer, gr_exe_layers_tiles) */
    uint32_t mm_tiles[MSPEC_MAX_BLOCKS];
} mnet_pipe_info;

/* A pipeline run's steps as simulated, from the engine's sync log of its first run (the
 * training's first device iteration): each stage's passes alone (the first step in which the
 * schedule gives the IPU that pass and nothing else; 0 when none does), the step's Copy
 * between IPUs (a step's cycles less its slowest IPU's passes), and a main step (every IPU
 * running all its passes: grouped, step 2N - 2; 0 when no step has them all). Steps 1 to S - 2
 * only: the first also holds the program's start, the last the weight update. */
typedef struct mnet_pipe_steps {
    uint32_t N, steps; /* stages; the run's steps (pipe_steps) */
    uint64_t fwd[MSPEC_MAX_BLOCKS], bwd[MSPEC_MAX_BLOCKS], fused;
    uint64_t copy;
    uint32_t main_step;
    uint64_t main;                   /* its cycles */
    uint64_t work[MSPEC_MAX_BLOCKS]; /* each IPU's passes in the main step */
} mnet_pipe_steps;

/* The steps of the pipeline run the engine g ran (x: its graph; p: its pipeline, p->stages >
 * 1), from sync logs of every IPU (mnet_cfg.log_steps): ERR_OK, or ERR_INPUT when the logs end
 * before the run's last step. */
int mnet_pipe_measure(const eng *g, const gr_exe *x, const mnet_pipe_info *p, int train,
                      mnet_pipe_steps *m);

/* Each step IPU `ipu` ran in the pipeline run the engine g ran (x: its graph), in run order,
 * but for the rounds of the Copies between IPUs: `each` gets its pipeline step (counted by
 * the Copies that end them), the step (gr_step) and its cycles (from the previous step's
 * sync release to its own). Returns the pipeline steps the log holds, at most cap. */
typedef void mnet_step_fn(void *ctx, uint32_t t, const gr_step *s, uint64_t cycles);
uint32_t mnet_pipe_walk(const eng *g, const gr_exe *x, uint32_t ipu, uint32_t cap,
                        mnet_step_fn *each, void *ctx);

typedef struct mnet_hooks {
    void (*epoch_begin)(void *ctx, int epoch, int epochs);
    void (*call_done)(void *ctx, const mnet_call *c);
    /* After a run (test = 0: training, 1: the test pass), before the system is freed: the
     * engine (statistics, tiles), the compiled graph (summary, tile memory) and the pipeline. */
    void (*finished)(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *p);
    void *ctx;
    /* NULL, or where a training run leaves the gradient of its last weight update (the mean
     * over its micro-batches, as the AdamW step read it; the network's parameter count of
     * floats, state_dict order) */
    float *grads;
} mnet_hooks;

/* ERR_OK, or ERR_INPUT (one line) for a network table (c->net other than the tutorial's) that
 * does not resolve, or a configuration its one-IPU graph does not build (gnet.h: replicas,
 * pipelining, several IPUs, I/O tiles, an infeed other than fp32, the offloaded optimiser, a
 * tile limit; train = 1: a strided convolution). The tutorial's: ERR_OK. */
int mnet_check_network(const mnet_cfg *c, int train, err *e);

/* 1 when blocks B1..BK on IPUs m[0..K) go B1 on IPU 0 and each next block on the same IPU or
 * the next (a pipeline's stages, or a sharded table's), else 0. */
int mnet_stages_in_order(const uint32_t *m, int K);
/* "a,b,..." of m[0..K) into buf (len bytes); returns buf. */
const char *mnet_stages_text(const uint32_t *m, int K, char *buf, size_t len);

/* ERR_OK, or ERR_INPUT (one line) for an every:N outfeed the training loop cannot make: N
 * must divide the gradient accumulation G, or be a multiple of G dividing a host call. */
int mnet_check_output(const mnet_cfg *c, err *e);

/* ERR_OK, or ERR_INPUT (one line naming the rule) for a pipelined configuration that cannot
 * run: B1 on IPU 0 and each next block on the same IPU or the next; pipe_check's rules for
 * training (train = 1: G) or the test pass (test_iters); an outfeed mode other than all or
 * final in training. Not pipelined: ERR_OK. */
int mnet_check_pipeline(const mnet_cfg *c, int train, err *e);

/* Train from params (MREF_NPARAMS floats: the initial weights) on train; params holds the
 * trained weights after. hooks may be NULL. ERR_OK, ERR_INPUT (bad options, a graph that
 * does not fit: the graph layer's one message) or ERR_FAULT. */
int mnet_train(const mnet_cfg *c, const mdata_split *train, float *params, const mnet_hooks *h,
               err *e);
/* Test accuracy (percent of every image of set) with params on the simulated IPU, batches of
 * c->run.test_batch (the last one padded, its padding ignored). */
int mnet_test(const mnet_cfg *c, const mdata_split *set, const float *params, double *accuracy,
              const mnet_hooks *h, err *e);

#endif
