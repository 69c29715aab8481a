// SPDX-License-Identifier: Apache-2.0
/* libdlx's C API: the surface of dlx::Trial (dlx/trial.hpp) for other languages (the Python
 * package python/dlx/ binds it with ctypes). Library: libdlx_c.so.
 *
 * Every function returns a dlx_status; DLX_OK is 0. On failure dlx_last_error() returns the
 * message of this thread's last failure (valid until the thread's next failing call). No C++
 * exception ever crosses this boundary. Strings returned through `const char**` belong to the
 * trial and stay valid until dlx_trial_destroy. Collective functions are marked; every rank calls
 * them in the same order (see trial.hpp). */
#ifndef DLX_C_API_H
#define DLX_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dlx_status {
  DLX_OK = 0,
  DLX_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, an unknown dtype, a negative root */
  DLX_ERROR_HPARAM = 2,           /* missing hyperparameter or wrong type */
  DLX_ERROR_COMM = 3,             /* a collective or the start-up check failed */
  DLX_ERROR_TRIAL = 4,            /* the trial record could not be written, bad environment */
  DLX_ERROR_CONFIG = 5,           /* the trial's code or configuration is wrong (a metric the
                                   * searcher needs missing, a refused metric name): running it
                                   * again fails the same way. With DLX_ERROR_HPARAM, what a
                                   * program should exit DLX_CONFIG_ERROR_EXIT_CODE for */
  DLX_ERROR_INTERNAL = 99         /* anything else (out of memory, ...) */
} dlx_status;

/* The same values as dlx::comm::DataType. */
typedef enum dlx_dtype {
  DLX_FLOAT32 = 0,
  DLX_FLOAT64 = 1,
  DLX_INT32 = 2,
  DLX_INT64 = 3,
  DLX_UINT32 = 4,
  DLX_UINT64 = 5
} dlx_dtype;

typedef struct dlx_tensor {
  void* data;    /* owned by the caller: host memory, or GPU memory for the *_device calls */
  size_t count;  /* elements */
  int dtype;     /* a dlx_dtype */
} dlx_tensor;

/* dlx_trial_create flags. */
#define DLX_TRIAL_NO_COMMUNICATOR 1u /* no MPI: a framework program (PyTorch, JAX) */
#define DLX_TRIAL_QUIET 2u           /* rank 0 does not announce a backend fallback */

/* "Checkpointed on request, requeue me". */
#define DLX_REQUEUE_EXIT_CODE 85
/* "The trial's code or configuration is wrong: do not retry": dlx-launch fails the trial at once,
 * with the program's last error line, instead of restarting it (docs/fault-tolerance.md). */
#define DLX_CONFIG_ERROR_EXIT_CODE 78

typedef struct dlx_trial dlx_trial;
typedef struct dlx_request dlx_request;

const char* dlx_last_error(void);

/* Collective (unless DLX_TRIAL_NO_COMMUNICATOR): MPI bring-up, start-up check, trial record. */
dlx_status dlx_trial_create(unsigned flags, dlx_trial** out);
void dlx_trial_destroy(dlx_trial* trial); /* accepts NULL */

dlx_status dlx_trial_rank(const dlx_trial* trial, int* out);
dlx_status dlx_trial_size(const dlx_trial* trial, int* out);
dlx_status dlx_trial_local_rank(const dlx_trial* trial, int* out);
dlx_status dlx_trial_in_trial(const dlx_trial* trial, int* out); /* 1 inside a dlx trial */
dlx_status dlx_trial_id(const dlx_trial* trial, int64_t* out);
/* Paths; "" when not set (outside a trial, or a fresh start for the latest checkpoint). */
dlx_status dlx_trial_experiment_dir(const dlx_trial* trial, const char** out);
dlx_status dlx_trial_checkpoint_dir(const dlx_trial* trial, const char** out);
dlx_status dlx_trial_latest_checkpoint(const dlx_trial* trial, const char** out);

/* All hyperparameters as a flat JSON object: dotted names, every mapping taken as a group (the
 * form of dlx before nested hyperparameters; a mapping that is a value comes out flattened too). */
dlx_status dlx_trial_hparams_json(const dlx_trial* trial, const char** out);
/* All hyperparameters as DLX_HPARAMS gives them: groups nested ({"optim": {"lr": 0.1}}), values
 * any JSON (docs/sdk.md "Hyperparameters"). */
dlx_status dlx_trial_hparams_nested_json(const dlx_trial* trial, const char** out);
/* One hyperparameter, or a whole group, as JSON text: `name` dotted ("optim.lr", "optim") or a
 * literal key; DLX_ERROR_HPARAM when the trial has none. */
dlx_status dlx_trial_hparam_json(const dlx_trial* trial, const char* name, const char** out);
/* Typed access with the C++ API's strict conversions (`name` as above); DLX_ERROR_HPARAM when
 * missing or wrong. */
dlx_status dlx_trial_hparam_double(const dlx_trial* trial, const char* name, double* out);
dlx_status dlx_trial_hparam_int64(const dlx_trial* trial, const char* name, int64_t* out);
dlx_status dlx_trial_hparam_bool(const dlx_trial* trial, const char* name, int* out);
dlx_status dlx_trial_hparam_string(const dlx_trial* trial, const char* name, const char** out);

/* A hyperparameter name warning of a binding that checks its own reads (the Python package):
 * kept in trial.h5 (rank 0 inside a trial; elsewhere nothing), where dlx status and dlx report
 * show it. `kind`: "default" (a name read with a default the experiment does not define) or
 * "unread" (a name the experiment defines that the trial has not read); `name` the dotted name;
 * `message` the warning as the program said it. Each (kind, name) is kept once; a record that
 * cannot be written is a warning on stderr, not a failure. DLX_ERROR_TRIAL for another kind. */
dlx_status dlx_trial_hparam_warning(dlx_trial* trial, const char* kind, const char* name, const char* message);

/* Collective. `names[i]` = `values[i]`, `count` metrics. */
dlx_status dlx_trial_report_training(dlx_trial* trial, int64_t step, const char* const* names,
                                     const double* values, size_t count);
dlx_status dlx_trial_report_validation(dlx_trial* trial, int64_t step, const char* const* names,
                                       const double* values, size_t count);
/* Names-once reporting: register `count` names once (every rank; checked as a report checks them,
 * DLX_ERROR_CONFIG for a refused or repeated name) and get *out, a small number naming them (the
 * same names again give the same number; at most 4096 sets per trial). Each report then passes
 * only `values`, one per name in that order: no name is compared, looked up or copied per report
 * (what Python's report_training and report_validation use). */
dlx_status dlx_trial_metric_names(dlx_trial* trial, const char* const* names, size_t count,
                                  uint32_t* out);
dlx_status dlx_trial_report_training_values(dlx_trial* trial, int64_t step, uint32_t names,
                                            const double* values);
/* As dlx_trial_report_validation_next, with registered names. */
dlx_status dlx_trial_report_validation_values(dlx_trial* trial, int64_t step, uint32_t names,
                                              const double* values, int* next);
dlx_status dlx_trial_finish(dlx_trial* trial); /* collective: completed, or stopped/paused */

/* The searcher (docs/searchers.md): train to the target length (0: no searcher length), save a
 * checkpoint there, then report validation with dlx_trial_report_validation_next, which asks the
 * searcher at the target length and sets *next to what it said. Every rank gets the same answer
 * (without a communicator every rank asks; the journal records one answer). */
typedef enum dlx_next { DLX_NEXT_TRAIN = 0, DLX_NEXT_STOP = 1, DLX_NEXT_PAUSE = 2, DLX_NEXT_COMPLETE = 3 } dlx_next;
dlx_status dlx_trial_start_length(const dlx_trial* trial, int64_t* out);
dlx_status dlx_trial_target_length(const dlx_trial* trial, int64_t* out);
dlx_status dlx_trial_report_validation_next(dlx_trial* trial, int64_t step, const char* const* names,
                                            const double* values, size_t count, int* next);

/* Whether the experiment's checkpoint period (checkpoint.period: batches, else minutes) says to
 * save after `step`. By batches every rank gives the same answer; by minutes rank 0's clock
 * decides: with MPI it is broadcast, without a communicator only rank 0 says 1 (combine the
 * answers with the framework, e.g. an all_reduce of MAX; dlx.torch.checkpoint_due does). */
dlx_status dlx_trial_checkpoint_due(dlx_trial* trial, int64_t step, int* out);
/* After a checkpoint signal and the save of step `saved_step` (dlx_trial_save_checkpoint):
 * waits for that save up to `deadline_seconds` (< 0: DLX_EXIT_DEADLINE_S, else 30 s), records in
 * trial.h5 why the trial stops, and sets *exit_code = 85: exit with it and Slurm requeues the
 * trial. DLX_ERROR_TRIAL when the last save was not of `saved_step`. */
dlx_status dlx_trial_checkpoint_and_exit(dlx_trial* trial, int64_t saved_step,
                                         double deadline_seconds, int* exit_code);
/* Collective: *out = 1 on every rank when any rank got a checkpoint signal (without a
 * communicator: when this process got one). */
dlx_status dlx_trial_should_checkpoint_and_exit(dlx_trial* trial, int* out);
/* *out = the checkpoint signal this process got (SIGTERM, SIGUSR1, SIGUSR2), 0: none. Local. */
dlx_status dlx_trial_checkpoint_signal(const dlx_trial* trial, int* out);
/* A program whose framework agrees on the notice (an all_reduce of MAX of every rank's
 * dlx_trial_checkpoint_signal) passes the agreed signal (> 0) before
 * dlx_trial_checkpoint_and_exit: rank 0 records it, even when the signal reached another rank
 * first. */
dlx_status dlx_trial_note_checkpoint_signal(dlx_trial* trial, int signal_number);

/* Collective, in place: fused (bucketed) sum of every tensor over all ranks. */
dlx_status dlx_trial_allreduce(dlx_trial* trial, const dlx_tensor* tensors, size_t count);
/* Non-blocking: the buffers must stay untouched until dlx_request_wait returns. */
dlx_status dlx_trial_allreduce_async(dlx_trial* trial, const dlx_tensor* tensors, size_t count,
                                     dlx_request** out);
dlx_status dlx_request_wait(dlx_request* request); /* then frees the request */
/* The same two for tensors in GPU memory (cudaMalloc, a CUDA tensor's data pointer), summed in
 * place on the device, never through the host; small ones packed into a device bucket by one
 * copy kernel. `cuda_stream` (a cudaStream_t; NULL: the legacy default stream) orders them: the
 * sums start after the work queued on it before the call, and work queued on it afterwards sees
 * them. The call, or dlx_request_wait, also returns once the sums are done (with the backend's
 * deadline: a dead peer is DLX_ERROR_COMM, not a hang). The NCCL backend always; the MPI backend
 * only where Open MPI is CUDA-aware: otherwise DLX_ERROR_COMM with why, and nothing is read. */
dlx_status dlx_trial_allreduce_device(dlx_trial* trial, const dlx_tensor* tensors, size_t count,
                                      void* cuda_stream);
dlx_status dlx_trial_allreduce_device_async(dlx_trial* trial, const dlx_tensor* tensors,
                                            size_t count, void* cuda_stream, dlx_request** out);
/* Collective: every rank ends with rank `root`'s tensors. */
dlx_status dlx_trial_broadcast(dlx_trial* trial, const dlx_tensor* tensors, size_t count,
                               int root);

/* ---- Checkpoints (docs/checkpoint-format.md; trial.hpp "Checkpoints") ----
 * A named tensor to save: host memory, row-major, owned by the caller until the save call
 * returns (the library snapshots it; the file is written in the background unless the
 * experiment says checkpoint.async: false). */
typedef struct dlx_named_tensor {
  const char* name;      /* "model/fc1/weight": each '/' is a group below /tensors */
  const char* dtype;     /* "float32", "float64", "float16", "int8" ... "int64", "uint8" ... "uint64" */
  const void* data;      /* may be NULL only when the shape holds no element */
  const uint64_t* shape; /* `rank` extents (NULL when rank is 0: a scalar) */
  size_t rank;
} dlx_named_tensor;

typedef struct dlx_checkpoint dlx_checkpoint; /* a loaded, verified checkpoint */

/* Collective (every rank calls it; rank 0's tensors are saved: they are replicated state).
 * Saves step-<step>.h5 into the trial's checkpoint directory, with retention after it.
 * `state_json`: a JSON object of small values (integers and booleans -> int64, other numbers ->
 * float64, strings), or NULL; its integer "data_cursor" is the data cursor. `metric`: the
 * searcher metric at this step (NaN: none). DLX_ERROR_TRIAL when the save (or the previous async
 * one) failed; the older checkpoints are intact. */
dlx_status dlx_trial_save_checkpoint(dlx_trial* trial, int64_t step, int64_t epoch,
                                     const dlx_named_tensor* tensors, size_t count,
                                     const char* state_json, double metric);
/* As dlx_trial_save_checkpoint, where tensors[i].data is GPU memory (of the calling thread's
 * current CUDA device) for every i with on_device[i] != 0 (on_device may be NULL: all host). The
 * library copies them itself, after the work queued so far on `cuda_stream` (a cudaStream_t;
 * NULL: the legacy default stream), the stream whose kernels wrote them, through a few pinned
 * buffers of its own into host memory it keeps from save to save (so later saves fault no
 * page), before returning: the GPU memory may change as soon as the call returns; no
 * intermediate host copy is made by the caller. A dlx built without CUDA, or a CUDA error, gives DLX_ERROR_TRIAL with the reason, and
 * nothing is written. */
dlx_status dlx_trial_save_checkpoint_device(dlx_trial* trial, int64_t step, int64_t epoch,
                                            const dlx_named_tensor* tensors,
                                            const unsigned char* on_device, size_t count,
                                            void* cuda_stream, const char* state_json,
                                            double metric);
/* What dlx_trial_save_checkpoint_flagged's flags[i] say of tensors[i] (bits, or'ed). */
#define DLX_TENSOR_ON_DEVICE 1u /* GPU memory, as on_device[i] != 0 above */
/* Copied after the call returns, on the library's writer thread (with checkpoint.async, the
 * default; a sync save copies it before returning): the caller keeps the memory unchanged until
 * dlx_trial_wait_for_snapshot returns, typically just before its optimizer's next update, so
 * that the copy overlaps the next forward and backward pass. */
#define DLX_TENSOR_SNAPSHOT_IN_BACKGROUND 2u
/* As dlx_trial_save_checkpoint_device, with each tensor's flags (NULL: all 0, host tensors copied
 * before returning). GPU tensors are copied through a few pinned buffers of the library's (64 MiB
 * at most, kept from save to save) into its ordinary host memory, after the work queued on
 * `cuda_stream` so far (an event: the host does not wait for the stream). A flag bit not defined
 * above is DLX_ERROR_INVALID_ARGUMENT, and nothing is saved. */
dlx_status dlx_trial_save_checkpoint_flagged(dlx_trial* trial, int64_t step, int64_t epoch,
                                             const dlx_named_tensor* tensors,
                                             const unsigned char* flags, size_t count,
                                             void* cuda_stream, const char* state_json,
                                             double metric);
/* Not collective: returns once the last save's DLX_TENSOR_SNAPSHOT_IN_BACKGROUND tensors are
 * copied (at once on ranks other than 0, and when none are being copied). A failed copy is not
 * reported here but by the next save or wait, as an async save's error is. */
dlx_status dlx_trial_wait_for_snapshot(dlx_trial* trial);
/* Not collective (rank 0's; *withdrawn = 0 elsewhere): waits for the save in flight and deletes
 * step-<step>.h5 when that save published it (*withdrawn = 1), for a caller that found tensors it
 * flagged DLX_TENSOR_SNAPSHOT_IN_BACKGROUND changed before dlx_trial_wait_for_snapshot returned:
 * the file may mix their bytes from before and after. That save's error, if any, is dropped (it
 * published nothing). DLX_ERROR_TRIAL when the file cannot be deleted. */
dlx_status dlx_trial_withdraw_checkpoint(dlx_trial* trial, int64_t step, int* withdrawn);
/* Collective: waits for a save in flight, at most `timeout_seconds` (< 0: no limit); *finished
 * = 0 when the time ran out first. */
dlx_status dlx_trial_wait_for_checkpoint(dlx_trial* trial, double timeout_seconds, int* finished);
/* Collective: the checkpoint to resume from (DLX_LATEST_CHECKPOINT, the searcher's named start
 * checkpoint, or the newest valid one), verified; *out = NULL on a fresh start. Every rank gets
 * the checkpoint rank 0 chose (without a communicator they agree through the trial's directory).
 * DLX_ERROR_TRIAL when the file holds per-rank state saved on another number of ranks. */
dlx_status dlx_trial_resume(dlx_trial* trial, dlx_checkpoint** out);
/* dlx_trial_resume, but a checkpoint with per-rank state of another world size is returned: the
 * caller restores the replicated state and decides about the per-rank state (compare
 * dlx_checkpoint_world_size with dlx_trial_size). */
dlx_status dlx_trial_resume_any_world_size(dlx_trial* trial, dlx_checkpoint** out);
/* dlx_trial_resume (dlx_trial_resume_any_world_size when `any_world_size` is not 0), but the
 * tensors whose names start with one of the `count` `prefixes` are verified and not held: they
 * are listed with data NULL (dlx_checkpoint_tensor_deferred says which), and
 * dlx_checkpoint_read_tensor reads each from the file straight into the caller's memory (a
 * model's parameters, without a copy through the library's). Every byte of the file is checked
 * before this returns, deferred or not. */
dlx_status dlx_trial_resume_deferring(dlx_trial* trial, int any_world_size,
                                      const char* const* prefixes, size_t count,
                                      dlx_checkpoint** out);
/* Where dlx_trial_resume_placing reads a tensor: memory of exactly `bytes` that the caller
 * owns, or NULL for the library's own. `name`, `dtype` and `shape` (`rank` extents) are the
 * file's and valid during the call only. Must not raise or unwind (a C callback). */
typedef void* (*dlx_place_fn)(void* context, const char* name, const char* dtype,
                              const uint64_t* shape, size_t rank, size_t bytes);
/* dlx_trial_resume_deferring, and each tensor not deferred is read where `place` says (when
 * `place` is not NULL): straight into memory the caller owns (an optimizer's moments, read into
 * the new tensors the optimizer will keep), verified there like every other tensor before this
 * returns. dlx_checkpoint_tensor's data then points into that memory, which must stay valid
 * until dlx_checkpoint_destroy; the library never frees it. `place` is called once per tensor
 * of every file tried, on the calling thread. A file that is refused (a damaged one, before
 * an older one is taken) leaves whatever it wrote in the memory given for it, so give new
 * memory, never state the program still uses (defer that instead). */
dlx_status dlx_trial_resume_placing(dlx_trial* trial, int any_world_size,
                                    const char* const* prefixes, size_t count, dlx_place_fn place,
                                    void* context, dlx_checkpoint** out);
/* dlx_trial_resume_placing, and each tensor for which `place_on_device` (when not NULL; asked
 * before `place`) returns CUDA device memory of exactly `bytes` on the calling thread's current
 * device is read there: piece by piece through a few pinned host buffers of the library's,
 * checksummed, and copied to the device on a stream of its own, the copies done before this
 * returns. One read of the file and no host memory of the tensors' size (a CUDA model's
 * parameters and an optimizer's moments, read into new device tensors). The same rules as for
 * `place`: new memory only, valid until dlx_checkpoint_destroy, never freed by the library.
 * dlx_checkpoint_tensor's data is then that device address and dlx_checkpoint_tensor_on_device
 * says 1. DLX_ERROR_TRIAL (saying so) from a dlx built without CUDA. */
dlx_status dlx_trial_resume_placing_on_device(dlx_trial* trial, int any_world_size,
                                              const char* const* prefixes, size_t count,
                                              dlx_place_fn place, dlx_place_fn place_on_device,
                                              void* context, dlx_checkpoint** out);
/* The checkpoint file `path` (any dlx checkpoint: this trial's, a PBT parent's, another
 * experiment's), read and verified as resume does; this rank's view of it. Not collective. */
dlx_status dlx_checkpoint_open(dlx_trial* trial, const char* path, dlx_checkpoint** out);
/* Not collective: this run resumes from `checkpoint`, one of this trial's that the trainer opened
 * itself (dlx_checkpoint_open): rank 0 says so and records the resume in trial.h5 as
 * dlx_trial_resume does (metrics after its step dropped); other ranks do nothing. */
dlx_status dlx_trial_note_resumed(dlx_trial* trial, const dlx_checkpoint* checkpoint);
void dlx_checkpoint_destroy(dlx_checkpoint* checkpoint); /* accepts NULL */
dlx_status dlx_checkpoint_step(const dlx_checkpoint* checkpoint, int64_t* out);
dlx_status dlx_checkpoint_epoch(const dlx_checkpoint* checkpoint, int64_t* out);
/* The number of ranks of the run that saved it. */
dlx_status dlx_checkpoint_world_size(const dlx_checkpoint* checkpoint, int64_t* out);
dlx_status dlx_checkpoint_path(const dlx_checkpoint* checkpoint, const char** out);
/* The small state as a JSON object (data_cursor included). */
dlx_status dlx_checkpoint_state_json(const dlx_checkpoint* checkpoint, const char** out);
dlx_status dlx_checkpoint_tensor_count(const dlx_checkpoint* checkpoint, size_t* out);
/* Tensor `index` (0 .. count-1, sorted by name): its bytes stay valid until
 * dlx_checkpoint_destroy. */
dlx_status dlx_checkpoint_tensor(const dlx_checkpoint* checkpoint, size_t index, const char** name,
                                 const char** dtype, const uint64_t** shape, size_t* rank,
                                 const void** data, size_t* bytes);
/* *out = 1 when tensor `index` was deferred (dlx_trial_resume_deferring): its data is NULL and
 * dlx_checkpoint_read_tensor reads it; 0 otherwise. */
dlx_status dlx_checkpoint_tensor_deferred(const dlx_checkpoint* checkpoint, size_t index, int* out);
/* *out = 1 when tensor `index` was read into the caller's device memory
 * (dlx_trial_resume_placing_on_device): its data is that device address; 0 otherwise. */
dlx_status dlx_checkpoint_tensor_on_device(const dlx_checkpoint* checkpoint, size_t index, int* out);
/* Copies tensor `index` into `destination`, which must be exactly its `bytes` long. A deferred
 * tensor is read from the file, its CRC-32Cs checked again as it is read: DLX_ERROR_TRIAL when
 * they no longer match (the file was changed after the resume verified it; `destination` then
 * holds part of the tensor). */
dlx_status dlx_checkpoint_read_tensor(const dlx_checkpoint* checkpoint, size_t index,
                                      void* destination, size_t bytes);
/* dlx_checkpoint_read_tensor for `count` tensors at once: tensor indices[i] into
 * destinations[i], exactly bytes[i] long. The deferred ones are read together, their CRC blocks
 * shared out over a few threads, so that a model of many small tensors is read in parallel,
 * not one tensor after another. Every index and size is checked before anything is copied
 * (DLX_ERROR_INVALID_ARGUMENT); the destinations must not overlap. */
dlx_status dlx_checkpoint_read_tensors(const dlx_checkpoint* checkpoint, size_t count,
                                       const size_t* indices, void* const* destinations,
                                       const size_t* bytes);

#ifdef __cplusplus
}
#endif

#endif /* DLX_C_API_H */
