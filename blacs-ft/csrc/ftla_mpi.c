/*
 * The only C in ftla: a thin, ABI-neutral layer over the MPI C API.
 *
 * Why C at all: MPI handles and constants (MPI_COMM_WORLD, MPI_DOUBLE,
 * MPI_ERRORS_RETURN, ...) are macros whose representation differs between
 * implementations (pointers in Open MPI, integers in MPICH). Compiling this file
 * with the chosen MPI's own `mpicc` lets the Rust side see every handle as an
 * `intptr_t` and every result as a plain MPI error code, whatever MPI is used.
 *
 * ULFM (MPIX_Comm_revoke/shrink/agree/failure_ack/failure_get_acked) is
 * declared weak, so a library without those symbols still links and runs;
 * ftla_ulfm_status() says at run time whether they can be used.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#if defined(MPIX_ERR_PROC_FAILED) && defined(MPIX_ERR_REVOKED) && !defined(FTLA_NO_ULFM)
#define FTLA_ULFM_HEADER 1
#pragma weak MPIX_Comm_revoke
#pragma weak MPIX_Comm_is_revoked
#pragma weak MPIX_Comm_shrink
#pragma weak MPIX_Comm_agree
#pragma weak MPIX_Comm_iagree
#pragma weak MPIX_Comm_failure_ack
#pragma weak MPIX_Comm_failure_get_acked
#else
#define FTLA_ULFM_HEADER 0
#endif

typedef intptr_t h_t;
#define COMM(h) ((MPI_Comm)(h))
#define HCOMM(c) ((h_t)(c))

/* ---- constants ------------------------------------------------------- */
h_t ftla_comm_world(void) { return HCOMM(MPI_COMM_WORLD); }
h_t ftla_comm_self(void) { return HCOMM(MPI_COMM_SELF); }
h_t ftla_comm_null(void) { return HCOMM(MPI_COMM_NULL); }
int ftla_any_source(void) { return MPI_ANY_SOURCE; }
int ftla_undefined(void) { return MPI_UNDEFINED; }

/* Error classes that mean "a process failed" / "communicator revoked";
 * -1 when this MPI has no ULFM header (no error can have that class). */
int ftla_err_proc_failed(void) {
#if FTLA_ULFM_HEADER
  return MPIX_ERR_PROC_FAILED;
#else
  return -1;
#endif
}
int ftla_err_proc_failed_pending(void) {
#if FTLA_ULFM_HEADER && defined(MPIX_ERR_PROC_FAILED_PENDING)
  return MPIX_ERR_PROC_FAILED_PENDING;
#else
  return -1;
#endif
}
int ftla_err_unsupported(void) { return MPI_ERR_UNSUPPORTED_OPERATION; }
int ftla_err_revoked(void) {
#if FTLA_ULFM_HEADER
  return MPIX_ERR_REVOKED;
#else
  return -1;
#endif
}

/* ---- start-up and shut-down ------------------------------------------ */
int ftla_initialized(int *flag) { return MPI_Initialized(flag); }
int ftla_finalized(int *flag) { return MPI_Finalized(flag); }
int ftla_init(int *provided) {
  return MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided);
}
int ftla_finalize(void) { return MPI_Finalize(); }
int ftla_abort(h_t comm, int code) { return MPI_Abort(COMM(comm), code); }
double ftla_wtime(void) { return MPI_Wtime(); }

int ftla_library_version(char *buf, int cap) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  int rc = MPI_Get_library_version(v, &len);
  if (rc != MPI_SUCCESS) return rc;
  if (len >= cap) len = cap - 1;
  memcpy(buf, v, (size_t)len);
  buf[len] = 0;
  return len;
}

/* 1: ULFM usable; 0: header or symbols missing; 2: symbols present but the
 * run did not enable fault tolerance (Open MPI without --with-ft ulfm). */
int ftla_ulfm_status(void) {
#if FTLA_ULFM_HEADER
  if (!MPIX_Comm_revoke || !MPIX_Comm_shrink || !MPIX_Comm_agree ||
      !MPIX_Comm_failure_ack || !MPIX_Comm_failure_get_acked)
    return 0;
  /* Open MPI exposes whether this run enabled FT as the control variable
   * mpi_ft_enable; other MPIs with these symbols are taken as enabled. */
  int provided = 0, ncvar = 0, enabled = 1;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 1;
  if (MPI_T_cvar_get_num(&ncvar) == MPI_SUCCESS) {
    for (int i = 0; i < ncvar; i++) {
      char name[256], desc[4];
      int nlen = sizeof name, dlen = sizeof desc, verb, bind, scope;
      MPI_Datatype dt;
      MPI_T_enum en;
      if (MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen,
                              &bind, &scope) != MPI_SUCCESS)
        continue;
      if (strcmp(name, "mpi_ft_enable") == 0) {
        MPI_T_cvar_handle h;
        int count = 0, val = 0;
        if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) == MPI_SUCCESS) {
          if (count == 1 && MPI_T_cvar_read(h, &val) == MPI_SUCCESS) enabled = val != 0;
          MPI_T_cvar_handle_free(&h);
        }
        break;
      }
    }
  }
  MPI_T_finalize();
  return enabled ? 1 : 2;
#else
  return 0;
#endif
}

/* ---- errors ---------------------------------------------------------- */
int ftla_error_class(int code, int *cls) { return MPI_Error_class(code, cls); }
int ftla_error_string(int code, char *buf, int cap) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, s, &len) != MPI_SUCCESS) return -1;
  if (len >= cap) len = cap - 1;
  memcpy(buf, s, (size_t)len);
  buf[len] = 0;
  return len;
}

/* ---- communicators --------------------------------------------------- */
int ftla_comm_set_errors_return(h_t comm) {
  return MPI_Comm_set_errhandler(COMM(comm), MPI_ERRORS_RETURN);
}
int ftla_comm_rank(h_t comm, int *rank) { return MPI_Comm_rank(COMM(comm), rank); }
int ftla_comm_size(h_t comm, int *size) { return MPI_Comm_size(COMM(comm), size); }
/* The Fortran handle (MPI_Fint) of a communicator: what a C ABI can hand to
 * an application without knowing its MPI's C handle type. */
int ftla_comm_c2f(h_t comm) { return (int)MPI_Comm_c2f(COMM(comm)); }
int ftla_comm_remote_size(h_t comm, int *size) { return MPI_Comm_remote_size(COMM(comm), size); }
int ftla_comm_dup(h_t comm, h_t *out) {
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(COMM(comm), &c);
  *out = HCOMM(c);
  return rc;
}
int ftla_comm_split(h_t comm, int color, int key, h_t *out) {
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_split(COMM(comm), color, key, &c);
  *out = HCOMM(c);
  return rc;
}
int ftla_comm_free(h_t *comm) {
  MPI_Comm c = COMM(*comm);
  if (c == MPI_COMM_NULL || c == MPI_COMM_WORLD || c == MPI_COMM_SELF) return MPI_SUCCESS;
  int rc = MPI_Comm_free(&c);
  *comm = HCOMM(c);
  return rc;
}
int ftla_comm_disconnect(h_t *comm) {
  MPI_Comm c = COMM(*comm);
  int rc = MPI_Comm_disconnect(&c);
  *comm = HCOMM(c);
  return rc;
}
int ftla_comm_get_parent(h_t *out) {
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_get_parent(&c);
  *out = HCOMM(c);
  return rc;
}
/* Spawn `n` copies of `cmd argv...` (argv NULL-terminated), root `root`. */
int ftla_comm_spawn(const char *cmd, char **argv, int n, int root, h_t comm, h_t *inter,
                    int *errcodes) {
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_spawn(cmd, argv, n, MPI_INFO_NULL, root, COMM(comm), &c, errcodes);
  *inter = HCOMM(c);
  return rc;
}
int ftla_intercomm_merge(h_t inter, int high, h_t *out) {
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Intercomm_merge(COMM(inter), high, &c);
  *out = HCOMM(c);
  return rc;
}

/* ---- ULFM ------------------------------------------------------------ */
int ftla_comm_revoke(h_t comm) {
#if FTLA_ULFM_HEADER
  if (!MPIX_Comm_revoke) return MPI_ERR_UNSUPPORTED_OPERATION;
  return MPIX_Comm_revoke(COMM(comm));
#else
  (void)comm;
  return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}
/* *flag = 1 when the communicator was revoked (here or elsewhere). */
int ftla_comm_is_revoked(h_t comm, int *flag) {
  *flag = 0;
#if FTLA_ULFM_HEADER
  if (!MPIX_Comm_is_revoked) return MPI_ERR_UNSUPPORTED_OPERATION;
  return MPIX_Comm_is_revoked(COMM(comm), flag);
#else
  (void)comm;
  return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}
int ftla_comm_shrink(h_t comm, h_t *out) {
#if FTLA_ULFM_HEADER
  if (!MPIX_Comm_shrink) return MPI_ERR_UNSUPPORTED_OPERATION;
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPIX_Comm_shrink(COMM(comm), &c);
  *out = HCOMM(c);
  return rc;
#else
  (void)comm;
  *out = HCOMM(MPI_COMM_NULL);
  return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}
int ftla_comm_agree(h_t comm, int *flag) {
#if FTLA_ULFM_HEADER
  if (!MPIX_Comm_agree) return MPI_ERR_UNSUPPORTED_OPERATION;
  return MPIX_Comm_agree(COMM(comm), flag);
#else
  (void)comm;
  (void)flag;
  return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}
/* Ranks (in `comm`) of the processes known to have failed; *n set to the
 * count, at most `cap` written. Acknowledges them first. */
/* Non-blocking agreement; `flag` must stay valid until the request
 * completes. Returns MPI_ERR_UNSUPPORTED_OPERATION where the library has
 * no MPIX_Comm_iagree (the caller then uses the blocking one). */
int ftla_comm_iagree(h_t comm, int *flag, h_t *req) {
#if FTLA_ULFM_HEADER
  if (!MPIX_Comm_iagree) return MPI_ERR_UNSUPPORTED_OPERATION;
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = MPIX_Comm_iagree(COMM(comm), flag, &r);
  *req = (h_t)r;
  return rc;
#else
  (void)comm;
  (void)flag;
  (void)req;
  return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}
int ftla_comm_failed_ranks(h_t comm, int *ranks, int cap, int *n) {
  *n = 0;
#if FTLA_ULFM_HEADER
  if (!MPIX_Comm_failure_ack || !MPIX_Comm_failure_get_acked) return MPI_ERR_UNSUPPORTED_OPERATION;
  int rc = MPIX_Comm_failure_ack(COMM(comm));
  if (rc != MPI_SUCCESS) return rc;
  MPI_Group failed, group;
  rc = MPIX_Comm_failure_get_acked(COMM(comm), &failed);
  if (rc != MPI_SUCCESS) return rc;
  int nf = 0;
  MPI_Group_size(failed, &nf);
  if (nf > 0) {
    int *in = malloc(sizeof(int) * (size_t)nf), *out = malloc(sizeof(int) * (size_t)nf);
    for (int i = 0; i < nf; i++) in[i] = i;
    int is_inter = 0;
    MPI_Comm_test_inter(COMM(comm), &is_inter);
    if (is_inter)
      MPI_Comm_remote_group(COMM(comm), &group);
    else
      MPI_Comm_group(COMM(comm), &group);
    rc = MPI_Group_translate_ranks(failed, nf, in, group, out);
    for (int i = 0; i < nf && i < cap; i++) ranks[i] = out[i];
    *n = nf;
    MPI_Group_free(&group);
    free(in);
    free(out);
  }
  MPI_Group_free(&failed);
  return rc;
#else
  (void)comm;
  (void)ranks;
  (void)cap;
  return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}

/* ---- data movement (f64, i64, u8) ------------------------------------ */
static MPI_Datatype dtype(int kind) {
  switch (kind) {
  case 0: return MPI_DOUBLE;
  case 1: return MPI_INT64_T;
  default: return MPI_BYTE;
  }
}
/* op: 0 sum, 1 max, 2 min, 3 bitwise or, 4 bitwise and */
static MPI_Op mpiop(int op) {
  switch (op) {
  case 0: return MPI_SUM;
  case 1: return MPI_MAX;
  case 2: return MPI_MIN;
  case 3: return MPI_BOR;
  default: return MPI_BAND;
  }
}
int ftla_barrier(h_t comm) { return MPI_Barrier(COMM(comm)); }
int ftla_bcast(h_t comm, void *buf, int64_t count, int kind, int root) {
  /* Counts above INT_MAX are sent in pieces. */
  char *p = buf;
  size_t esz = kind == 0 ? 8 : kind == 1 ? 8 : 1;
  while (count > 0) {
    int c = count > (1 << 30) ? (1 << 30) : (int)count;
    int rc = MPI_Bcast(p, c, dtype(kind), root, COMM(comm));
    if (rc != MPI_SUCCESS) return rc;
    p += (size_t)c * esz;
    count -= c;
  }
  return MPI_SUCCESS;
}
/* Nonblocking broadcast; the request travels as an intptr_t like the
 * other handles. */
int ftla_ibcast(h_t comm, void *buf, int count, int kind, int root, h_t *req) {
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = MPI_Ibcast(buf, count, dtype(kind), root, COMM(comm), &r);
  *req = (h_t)r;
  return rc;
}
int ftla_test(h_t *req, int *done) {
  MPI_Request r = (MPI_Request)*req;
  int rc = MPI_Test(&r, done, MPI_STATUS_IGNORE);
  *req = (h_t)r;
  return rc;
}
int ftla_wait(h_t *req) {
  MPI_Request r = (MPI_Request)*req;
  int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  *req = (h_t)r;
  return rc;
}
int ftla_allreduce(h_t comm, void *buf, int count, int kind, int op) {
  return MPI_Allreduce(MPI_IN_PLACE, buf, count, dtype(kind), mpiop(op), COMM(comm));
}
int ftla_reduce(h_t comm, void *buf, int count, int kind, int op, int root) {
  int me = 0;
  MPI_Comm_rank(COMM(comm), &me);
  if (me == root)
    return MPI_Reduce(MPI_IN_PLACE, buf, count, dtype(kind), mpiop(op), root, COMM(comm));
  return MPI_Reduce(buf, NULL, count, dtype(kind), mpiop(op), root, COMM(comm));
}
int ftla_allgather(h_t comm, const void *send, int count, int kind, void *recv) {
  return MPI_Allgather(send, count, dtype(kind), recv, count, dtype(kind), COMM(comm));
}
int ftla_send(h_t comm, const void *buf, int count, int kind, int dest, int tag) {
  return MPI_Send(buf, count, dtype(kind), dest, tag, COMM(comm));
}
int ftla_isend(h_t comm, const void *buf, int count, int kind, int dest, int tag, h_t *req) {
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = MPI_Isend(buf, count, dtype(kind), dest, tag, COMM(comm), &r);
  *req = (h_t)r;
  return rc;
}
int ftla_recv(h_t comm, void *buf, int count, int kind, int src, int tag, int *got_src,
              int *got_count) {
  MPI_Status st;
  int rc = MPI_Recv(buf, count, dtype(kind), src, tag, COMM(comm), &st);
  if (rc == MPI_SUCCESS) {
    if (got_src) *got_src = st.MPI_SOURCE;
    if (got_count) MPI_Get_count(&st, dtype(kind), got_count);
  }
  return rc;
}
int ftla_sendrecv(h_t comm, const void *sbuf, int scount, int dest, void *rbuf, int rcount,
                  int src, int kind, int tag, int *got_count) {
  MPI_Status st;
  int rc = MPI_Sendrecv(sbuf, scount, dtype(kind), dest, tag, rbuf, rcount, dtype(kind), src, tag,
                        COMM(comm), &st);
  if (rc == MPI_SUCCESS && got_count) MPI_Get_count(&st, dtype(kind), got_count);
  return rc;
}
int ftla_iprobe(h_t comm, int src, int tag, int *flag, int *got_src, int *got_count, int kind) {
  MPI_Status st;
  int rc = MPI_Iprobe(src, tag, COMM(comm), flag, &st);
  if (rc == MPI_SUCCESS && *flag) {
    if (got_src) *got_src = st.MPI_SOURCE;
    if (got_count) MPI_Get_count(&st, dtype(kind), got_count);
  }
  return rc;
}
