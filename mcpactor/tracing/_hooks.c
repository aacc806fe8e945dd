/*
 * mcpactor.tracing._hooks: the recording's per-pass and per-spawn hooks, in C.
 *
 * The same objects as the Python reference: PassHook (mcpactor.tracing.hooks) and
 * SpawnHook (the task_spawned of mcpactor.tracing.tasks.Naming in a recording), which
 * document what each does; the test suite checks that both give the same trace, byte
 * for byte. They run for every pass of Trio's loop, every clock reading and every
 * spawned task while a recording runs; in Python they are most of what recording costs
 * the recorded process.
 *
 * Slots are read and written through their offsets, taken from the classes' member
 * descriptors when a hook is made (Trio's Task.context; every slot of Node and
 * Numbering), for objects of exactly those classes; anything else goes through the
 * usual attribute access.
 *
 * Optional: setup.py builds it where a C compiler is at hand; without it the Python
 * hooks run (MCPACTOR_PURE_HOOKS=1 picks them anyway).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "structmember.h"

static PyObject *s_context, *s_id, *s_pending, *s_muted, *s_kids, *s_parent, *s_ordinal,
    *s_rec, *s_numbering, *s_last, *s_new, *s_planned, *s_task, *s_allow_deterministic,
    *s_sched, *s_name, *s_rng;
static PyObject *zero;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static void
slot_set(PyObject *obj, Py_ssize_t off, PyObject *value)
{
    PyObject *old = SLOT(obj, off);
    SLOT(obj, off) = Py_NewRef(value);
    Py_XDECREF(old);
}

/* The offset of a class's slot `name` (a member descriptor holding an object). */
static Py_ssize_t
member_offset(PyObject *cls, PyObject *name)
{
    PyObject *d = PyObject_GetAttr(cls, name);
    if (d == NULL) return -1;
    if (!PyObject_TypeCheck(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%R.%U is not a slot", cls, name);
        Py_DECREF(d);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    Py_ssize_t off = (m->type == T_OBJECT_EX || m->type == T_OBJECT) ? m->offset : -1;
    Py_DECREF(d);
    if (off < 0) PyErr_Format(PyExc_TypeError, "%R.%U does not hold an object", cls, name);
    return off;
}

/* The slots the hooks use. */
typedef struct {
    PyTypeObject *task_type;
    Py_ssize_t task_context;
    PyTypeObject *node_type;
    Py_ssize_t node_name, node_id, node_kids, node_muted, node_ordinal, node_parent,
        node_pending, node_rec, node_rng;
    PyTypeObject *numbering_type;
    Py_ssize_t numbering_last, numbering_new;
} Layout;

static int
layout_init(Layout *l, PyObject *task_type, PyObject *node_type, PyObject *numbering_type)
{
    if (!PyType_Check(task_type) || !PyType_Check(node_type) || !PyType_Check(numbering_type)) {
        PyErr_SetString(PyExc_TypeError, "task_type, node_type and numbering_type are classes");
        return -1;
    }
#define OFF(field, cls, attr) if ((l->field = member_offset(cls, attr)) < 0) return -1
    OFF(task_context, task_type, s_context);
    OFF(node_name, node_type, s_name); OFF(node_id, node_type, s_id);
    OFF(node_kids, node_type, s_kids); OFF(node_muted, node_type, s_muted);
    OFF(node_ordinal, node_type, s_ordinal); OFF(node_parent, node_type, s_parent);
    OFF(node_pending, node_type, s_pending); OFF(node_rec, node_type, s_rec);
    OFF(node_rng, node_type, s_rng);
    OFF(numbering_last, numbering_type, s_last); OFF(numbering_new, numbering_type, s_new);
#undef OFF
    l->task_type = (PyTypeObject *)task_type;
    l->node_type = (PyTypeObject *)node_type;
    l->numbering_type = (PyTypeObject *)numbering_type;
    return 0;
}

/* A new reference to task.context. */
static PyObject *
task_context(Layout *l, PyObject *task)
{
    if (Py_TYPE(task) == l->task_type) {
        PyObject *ctx = SLOT(task, l->task_context);
        if (ctx != NULL) return Py_NewRef(ctx);
    }
    return PyObject_GetAttr(task, s_context);
}

/* A new reference to node.<attr>, read from its slot when node is a Node. */
static PyObject *
node_get(Layout *l, PyObject *node, Py_ssize_t off, PyObject *name)
{
    if (Py_TYPE(node) == l->node_type) {
        PyObject *v = SLOT(node, off);
        if (v != NULL) return Py_NewRef(v);
    }
    return PyObject_GetAttr(node, name);
}

/* ------------------------------------------------------------------------------------ */
/* PassHook                                                                              */

typedef struct {
    PyObject_HEAD
    Layout layout;
    PyObject *runq;        /* the run queue: a deque (subclass) */
    getiterfunc deque_iter;/* deque's own iteration (the run queue's class's is this hook) */
    PyObject *rec;         /* the only recording, or None: then `many` decides */
    PyObject *events;      /* rec._events */
    PyObject *numbering;   /* rec.numbering */
    PyObject *handoff;     /* rec.handoff */
    PyObject *many;        /* the scheduler's Python hook for any other case */
    PyObject *coin;        /* () -> float: below 0.5, the batch is reversed */
    PyObject *keep;        /* Trio's replaced coin (KeepOrder: .planned) */
    PyObject *trio_run_dict; /* trio._core._run's namespace (_ALLOW_DETERMINISTIC_SCHEDULING) */
    PyObject *inner;       /* the wrapped clock's reading (plus offset), or None */
    PyObject *virtual_now; /* () -> float: the reading when there is no inner clock */
    PyObject *trio_state;  /* Trio's thread-local dict: "task" in it while a task runs */
    PyObject *track;       /* the TRACK context variable */
    PyObject *nobody;      /* NOBODY */
    PyObject *ctx_get;     /* contextvars.Context.get */
    PyObject *popped;      /* the current batch, in the order Trio pops it */
    PyObject *current;     /* its followed tasks' numbers, in run order (the sched run) */
    double offset;
    double now;
    int fresh;
    Py_ssize_t chunk_items;
} PassHook;

static int
pass_traverse(PassHook *self, visitproc visit, void *arg)
{
    Py_VISIT(self->runq); Py_VISIT(self->rec); Py_VISIT(self->events);
    Py_VISIT(self->numbering); Py_VISIT(self->handoff); Py_VISIT(self->many);
    Py_VISIT(self->coin); Py_VISIT(self->keep); Py_VISIT(self->trio_run_dict);
    Py_VISIT(self->inner); Py_VISIT(self->virtual_now); Py_VISIT(self->trio_state);
    Py_VISIT(self->track); Py_VISIT(self->nobody); Py_VISIT(self->ctx_get);
    Py_VISIT(self->popped); Py_VISIT(self->current);
    Py_VISIT((PyObject *)self->layout.task_type); Py_VISIT((PyObject *)self->layout.node_type);
    Py_VISIT((PyObject *)self->layout.numbering_type);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
pass_clear(PassHook *self)
{
    Py_CLEAR(self->runq); Py_CLEAR(self->rec); Py_CLEAR(self->events);
    Py_CLEAR(self->numbering); Py_CLEAR(self->handoff); Py_CLEAR(self->many);
    Py_CLEAR(self->coin); Py_CLEAR(self->keep); Py_CLEAR(self->trio_run_dict);
    Py_CLEAR(self->inner); Py_CLEAR(self->virtual_now); Py_CLEAR(self->trio_state);
    Py_CLEAR(self->track); Py_CLEAR(self->nobody); Py_CLEAR(self->ctx_get);
    Py_CLEAR(self->popped); Py_CLEAR(self->current);
    Py_CLEAR(self->layout.task_type); Py_CLEAR(self->layout.node_type);
    Py_CLEAR(self->layout.numbering_type);
    return 0;
}

static void
pass_dealloc(PassHook *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    pass_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

#define SET_FIELD(field, value) do { PyObject *_old = (PyObject *)self->field; \
    Py_XINCREF(value); self->field = (value); Py_XDECREF(_old); } while (0)

static int
pass_init(PassHook *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"runq", "many", "coin", "keep", "trio_run", "inner", "offset",
                             "virtual_now", "trio_state", "track", "nobody", "ctx_get",
                             "chunk_items", "task_type", "node_type", "numbering_type",
                             NULL};
    PyObject *runq, *many, *coin, *keep, *trio_run, *inner, *virtual_now, *trio_state,
        *track, *nobody, *ctx_get, *task_type, *node_type, *numbering_type;
    double offset;
    Py_ssize_t chunk_items;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOdOOOOOnOOO", kwlist, &runq, &many,
                                     &coin, &keep, &trio_run, &inner, &offset, &virtual_now,
                                     &trio_state, &track, &nobody, &ctx_get, &chunk_items,
                                     &task_type, &node_type, &numbering_type))
        return -1;
    Layout layout;
    if (layout_init(&layout, task_type, node_type, numbering_type) < 0) return -1;
    /* The deque's own iteration: the first class in the run queue's MRO that is not made
       in Python (the run queue's own class's iteration is this hook). */
    PyObject *mro = Py_TYPE(runq)->tp_mro;
    getiterfunc found = NULL;
    for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!(base->tp_flags & Py_TPFLAGS_HEAPTYPE) && base->tp_iter != NULL) {
            found = base->tp_iter;
            break;
        }
    }
    if (found == NULL) {
        PyErr_SetString(PyExc_TypeError, "PassHook: the run queue is not a deque");
        return -1;
    }
    if (!PyModule_Check(trio_run)) {
        PyErr_SetString(PyExc_TypeError, "PassHook: trio_run is Trio's run module");
        return -1;
    }
    PyObject *trio_run_dict = Py_NewRef(PyModule_GetDict(trio_run));
    pass_clear(self);
    self->layout = layout;
    Py_INCREF(layout.task_type); Py_INCREF(layout.node_type); Py_INCREF(layout.numbering_type);
    self->deque_iter = found;
    self->trio_run_dict = trio_run_dict;
    SET_FIELD(runq, runq); SET_FIELD(many, many); SET_FIELD(coin, coin);
    SET_FIELD(keep, keep); SET_FIELD(inner, inner);
    SET_FIELD(virtual_now, virtual_now); SET_FIELD(trio_state, trio_state);
    SET_FIELD(track, track); SET_FIELD(nobody, nobody); SET_FIELD(ctx_get, ctx_get);
    SET_FIELD(rec, Py_None);
    self->popped = PyList_New(0);
    self->current = PyTuple_New(0);
    if (self->popped == NULL || self->current == NULL) return -1;
    self->chunk_items = chunk_items;
    self->offset = offset;
    self->fresh = 1;
    self->now = 0.0;
    if (inner != Py_None) {
        PyObject *v = PyObject_CallNoArgs(inner);
        if (v == NULL) return -1;
        double now = PyFloat_AsDouble(v);
        Py_DECREF(v);
        if (now == -1.0 && PyErr_Occurred()) return -1;
        self->now = offset + now;
    }
    return 0;
}

/* bind(rec): the single recording the fast path serves (None: `many` decides). */
static PyObject *
pass_bind(PassHook *self, PyObject *rec)
{
    if (rec == Py_None) {
        SET_FIELD(rec, Py_None);
        Py_CLEAR(self->events); Py_CLEAR(self->numbering); Py_CLEAR(self->handoff);
        Py_RETURN_NONE;
    }
    PyObject *events = PyObject_GetAttrString(rec, "_events");
    if (events == NULL) return NULL;
    if (!PyList_CheckExact(events)) {
        Py_DECREF(events);
        PyErr_SetString(PyExc_TypeError, "PassHook.bind: the recording's _events is not a list");
        return NULL;
    }
    PyObject *numbering = PyObject_GetAttr(rec, s_numbering);
    PyObject *handoff = PyObject_GetAttrString(rec, "handoff");
    if (numbering == NULL || handoff == NULL) {
        Py_DECREF(events); Py_XDECREF(numbering); Py_XDECREF(handoff);
        return NULL;
    }
    if (Py_TYPE(numbering) != self->layout.numbering_type) {
        Py_DECREF(events); Py_DECREF(numbering); Py_DECREF(handoff);
        PyErr_SetString(PyExc_TypeError, "PassHook.bind: the recording's numbering is not a Numbering");
        return NULL;
    }
    SET_FIELD(rec, rec);
    Py_XSETREF(self->events, events);
    Py_XSETREF(self->numbering, numbering);
    Py_XSETREF(self->handoff, handoff);
    Py_RETURN_NONE;
}

static int
pass_now(PassHook *self, double *out)
{
    if (self->inner == Py_None) {
        PyObject *v = PyObject_CallNoArgs(self->virtual_now);
        if (v == NULL) return -1;
        *out = PyFloat_AsDouble(v);
        Py_DECREF(v);
        return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
    }
    *out = self->now;
    return 0;
}

/* The hook: one pass's batch (see mcpactor.tracing.hooks.PassHook.__call__). */
static PyObject *
pass_call(PassHook *self, PyObject *args, PyObject *kwargs)
{
    PyObject *it = self->deque_iter(self->runq);
    if (it == NULL) return NULL;
    PyObject *tasks = PySequence_List(it);
    Py_DECREF(it);
    if (tasks == NULL) return NULL;
    if (self->rec == Py_None) {
        PyObject *ordered = PyObject_CallOneArg(self->many, tasks);
        Py_DECREF(tasks);
        if (ordered == NULL) return NULL;
        PyObject *r = PyObject_CallOneArg((PyObject *)&PyReversed_Type, ordered);
        Py_DECREF(ordered);
        return r;
    }
    Layout *l = &self->layout;
    Py_ssize_t n = PyList_GET_SIZE(tasks);
    PyObject *run = PyTuple_New(n);
    if (run == NULL) goto error_tasks;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ctx = task_context(l, PyList_GET_ITEM(tasks, i));
        if (ctx == NULL) goto error_run;
        PyObject *call[3] = {ctx, self->track, self->nobody};
        PyObject *node = PyObject_Vectorcall(self->ctx_get, call, 3, NULL);
        Py_DECREF(ctx);
        if (node == NULL) goto error_run;
        PyObject *tid = node_get(l, node, l->node_id, s_id);
        Py_DECREF(node);
        if (tid == NULL) goto error_run;
        int yes = PyObject_IsTrue(tid);
        if (yes < 0) { Py_DECREF(tid); goto error_run; }
        if (yes) PyTuple_SET_ITEM(run, k++, tid);  /* steals */
        else Py_DECREF(tid);
    }
    if (k < n && _PyTuple_Resize(&run, k) < 0) goto error_tasks;
    PyObject *flip = PyObject_CallNoArgs(self->coin);
    if (flip == NULL) goto error_run;
    double coin = PyFloat_AsDouble(flip);
    Py_DECREF(flip);
    if (coin == -1.0 && PyErr_Occurred()) goto error_run;
    if (coin < 0.5) {
        for (Py_ssize_t i = 0, j = k - 1; i < j; i++, j--) {
            PyObject *tmp = PyTuple_GET_ITEM(run, i);
            PyTuple_SET_ITEM(run, i, PyTuple_GET_ITEM(run, j));
            PyTuple_SET_ITEM(run, j, tmp);
        }
    } else if (PyList_Reverse(tasks) < 0) {
        goto error_run;
    }
    /* tasks is now in the order Trio pops it: the run order reversed. */
    Py_SETREF(self->popped, Py_NewRef(tasks));
    Py_SETREF(self->current, Py_NewRef(run));
    PyObject *events = self->events;
    if (k) {
        double now;
        if (pass_now(self, &now) < 0) goto error_run;
        PyObject *pending = SLOT(self->numbering, l->numbering_new);
        if (pending == NULL || !PyList_CheckExact(pending)) {
            PyErr_SetString(PyExc_TypeError, "Numbering.new is not a list");
            goto error_run;
        }
        PyObject *new;
        if (PyList_GET_SIZE(pending)) {
            new = PyList_AsTuple(pending);
            if (new == NULL || PyList_SetSlice(pending, 0, PyList_GET_SIZE(pending), NULL) < 0) {
                Py_XDECREF(new);
                goto error_run;
            }
        } else {
            new = Py_NewRef(Py_None);
        }
        PyObject *nowf = PyFloat_FromDouble(now);
        PyObject *record = nowf == NULL ? NULL : PyTuple_New(7);
        if (record == NULL) { Py_XDECREF(nowf); Py_DECREF(new); goto error_run; }
        PyTuple_SET_ITEM(record, 0, Py_NewRef(zero));
        PyTuple_SET_ITEM(record, 1, Py_NewRef(Py_None));
        PyTuple_SET_ITEM(record, 2, Py_NewRef(Py_None));
        PyTuple_SET_ITEM(record, 3, Py_NewRef(s_sched));
        PyTuple_SET_ITEM(record, 4, nowf);
        PyTuple_SET_ITEM(record, 5, Py_NewRef(run));
        PyTuple_SET_ITEM(record, 6, new);
        /* One record, appended as a whole: a worker thread may append its own between
           two of this thread's calls, never inside one. */
        Py_ssize_t at = PyList_GET_SIZE(events);
        int failed = PyList_SetSlice(events, at, at, record);
        Py_DECREF(record);
        if (failed < 0) goto error_run;
    }
    self->fresh = 1;
    if (PyList_GET_SIZE(events) >= self->chunk_items) {
        PyObject *r = PyObject_CallNoArgs(self->handoff);
        if (r == NULL) goto error_run;
        Py_DECREF(r);
    }
    PyObject *det = PyDict_GetItemWithError(self->trio_run_dict, s_allow_deterministic);
    if (det == NULL && PyErr_Occurred()) goto error_run;
    int deterministic = det == NULL ? 0 : PyObject_IsTrue(det);
    if (deterministic < 0) goto error_run;
    if (deterministic) {
        PyObject *planned = PyList_GetSlice(tasks, 0, n);
        if (planned == NULL || PyObject_SetAttr(self->keep, s_planned, planned) < 0) {
            Py_XDECREF(planned);
            goto error_run;
        }
        Py_DECREF(planned);
    }
    Py_DECREF(run);
    PyObject *r = PyObject_GetIter(tasks);
    Py_DECREF(tasks);
    return r;
error_run:
    Py_XDECREF(run);
error_tasks:
    Py_DECREF(tasks);
    return NULL;
}

/* current_time(): the pass's time (see mcpactor.tracing.hooks.PassHook.current_time). */
static PyObject *
pass_current_time(PassHook *self, PyObject *unused)
{
    if (self->inner == Py_None) return PyObject_CallNoArgs(self->virtual_now);
    if (self->fresh) {
        int running = PyDict_Contains(self->trio_state, s_task);
        if (running < 0) return NULL;
        if (!running) {
            PyObject *v = PyObject_CallNoArgs(self->inner);
            if (v == NULL) return NULL;
            double now = PyFloat_AsDouble(v);
            Py_DECREF(v);
            if (now == -1.0 && PyErr_Occurred()) return NULL;
            self->now = self->offset + now;
            self->fresh = 0;
        }
    }
    return PyFloat_FromDouble(self->now);
}

static PyObject *
pass_get_now(PassHook *self, void *closure)
{
    double now;
    if (pass_now(self, &now) < 0) return NULL;
    return PyFloat_FromDouble(now);
}

static PyObject *
pass_get_fresh(PassHook *self, void *closure)
{
    return PyBool_FromLong(self->fresh);
}

static int
pass_set_fresh(PassHook *self, PyObject *value, void *closure)
{
    int v = value == NULL ? 0 : PyObject_IsTrue(value);
    if (v < 0) return -1;
    self->fresh = v;
    return 0;
}

static PyObject *
pass_get_rec(PassHook *self, void *closure)
{
    return Py_NewRef(self->rec ? self->rec : Py_None);
}

static PyObject *
pass_get_current(PassHook *self, void *closure)
{
    return Py_NewRef(self->current);
}

static PyObject *
pass_get_order(PassHook *self, void *closure)
{
    PyObject *order = PyList_GetSlice(self->popped, 0, PyList_GET_SIZE(self->popped));
    if (order != NULL && PyList_Reverse(order) < 0) Py_CLEAR(order);
    return order;
}

static PyMethodDef pass_methods[] = {
    {"bind", (PyCFunction)pass_bind, METH_O,
     "bind(rec): the recording the hook serves alone (None: every pass goes to `many`)."},
    {"current_time", (PyCFunction)pass_current_time, METH_NOARGS,
     "current_time(): the pass's clock reading."},
    {NULL}
};

static PyGetSetDef pass_getset[] = {
    {"now", (getter)pass_get_now, NULL, "The pass's clock reading.", NULL},
    {"fresh", (getter)pass_get_fresh, (setter)pass_set_fresh,
     "Whether the next reading outside a task is a new pass's.", NULL},
    {"rec", (getter)pass_get_rec, NULL, "The recording served alone (or None).", NULL},
    {"order", (getter)pass_get_order, NULL, "The current batch, in run order.", NULL},
    {"current", (getter)pass_get_current, NULL,
     "The current batch's followed tasks' numbers, in run order.", NULL},
    {NULL}
};

static PyType_Slot pass_slots[] = {
    {Py_tp_doc, "The recording's run-queue hook and clock (see mcpactor.tracing.hooks)."},
    {Py_tp_init, pass_init},
    {Py_tp_call, pass_call},
    {Py_tp_traverse, pass_traverse},
    {Py_tp_clear, pass_clear},
    {Py_tp_dealloc, pass_dealloc},
    {Py_tp_methods, pass_methods},
    {Py_tp_getset, pass_getset},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL}
};

static PyType_Spec pass_spec = {
    "mcpactor.tracing._hooks.PassHook", sizeof(PassHook), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, pass_slots
};

/* ------------------------------------------------------------------------------------ */
/* SpawnHook: names and numbers each spawned task (Trio's task_spawned).                  */

typedef struct {
    PyObject_HEAD
    Layout layout;
    PyObject *track;       /* TRACK */
    PyObject *nobody;      /* NOBODY */
    PyObject *ctx_get;     /* contextvars.Context.get */
    PyObject *root;        /* (node) -> None: a pending root becomes the task's */
} SpawnHook;

static int
spawn_traverse(SpawnHook *self, visitproc visit, void *arg)
{
    Py_VISIT(self->track); Py_VISIT(self->nobody); Py_VISIT(self->ctx_get);
    Py_VISIT(self->root);
    Py_VISIT((PyObject *)self->layout.task_type); Py_VISIT((PyObject *)self->layout.node_type);
    Py_VISIT((PyObject *)self->layout.numbering_type);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
spawn_clear(SpawnHook *self)
{
    Py_CLEAR(self->track); Py_CLEAR(self->nobody); Py_CLEAR(self->ctx_get);
    Py_CLEAR(self->root);
    Py_CLEAR(self->layout.task_type); Py_CLEAR(self->layout.node_type);
    Py_CLEAR(self->layout.numbering_type);
    return 0;
}

static void
spawn_dealloc(SpawnHook *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    spawn_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int
spawn_init(SpawnHook *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"track", "nobody", "ctx_get", "root", "task_type", "node_type",
                             "numbering_type", NULL};
    PyObject *track, *nobody, *ctx_get, *root, *task_type, *node_type, *numbering_type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOO", kwlist, &track, &nobody,
                                     &ctx_get, &root, &task_type, &node_type, &numbering_type))
        return -1;
    Layout layout;
    if (layout_init(&layout, task_type, node_type, numbering_type) < 0) return -1;
    spawn_clear(self);
    self->layout = layout;
    Py_INCREF(layout.task_type); Py_INCREF(layout.node_type); Py_INCREF(layout.numbering_type);
    SET_FIELD(track, track); SET_FIELD(nobody, nobody); SET_FIELD(ctx_get, ctx_get);
    SET_FIELD(root, root);
    return 0;
}

/* track = value in ctx (as ctx.run(TRACK.set, value)). */
static int
set_in_context(SpawnHook *self, PyObject *ctx, PyObject *value)
{
    if (!PyContext_CheckExact(ctx)) {
        PyErr_SetString(PyExc_TypeError, "a task's context is not a contextvars.Context");
        return -1;
    }
    if (PyContext_Enter(ctx) < 0) return -1;
    PyObject *token = PyContextVar_Set(self->track, value);
    if (PyContext_Exit(ctx) < 0) { Py_XDECREF(token); return -1; }
    if (token == NULL) return -1;
    Py_DECREF(token);
    return 0;
}

/* task_spawned(task) (see mcpactor.tracing.tasks.Naming.task_spawned, numbered). */
static PyObject *
spawn_task_spawned(SpawnHook *self, PyObject *task)
{
    Layout *l = &self->layout;
    PyObject *ctx = task_context(l, task);
    if (ctx == NULL) return NULL;
    PyObject *call[3] = {ctx, self->track, self->nobody};
    PyObject *node = PyObject_Vectorcall(self->ctx_get, call, 3, NULL);
    PyObject *child = NULL, *key = NULL, *kids_obj = NULL;
    if (node == NULL) goto error;
    if (Py_TYPE(node) != l->node_type) {
        PyErr_SetString(PyExc_TypeError, "a task's node is not a Node");
        goto error;
    }
    PyObject *pid = SLOT(node, l->node_id);
    if (pid == NULL) { PyErr_SetString(PyExc_AttributeError, "Node.id"); goto error; }
    int followed = PyObject_IsTrue(pid);
    if (followed < 0) goto error;
    if (!followed) {
        PyObject *pending = SLOT(node, l->node_pending);
        if (pending == Py_True) {
            PyObject *r = PyObject_CallOneArg(self->root, node);
            if (r == NULL) goto error;
            Py_DECREF(r);
        }
        goto done;
    }
    if (SLOT(node, l->node_muted) == Py_True) {
        /* Spawned by a transport from inside a followed task: the transport's own. */
        if (set_in_context(self, ctx, self->nobody) < 0) goto error;
        goto done;
    }
    long kids = PyLong_AsLong(SLOT(node, l->node_kids));
    if (kids == -1 && PyErr_Occurred()) goto error;
    kids_obj = PyLong_FromLong(kids + 1);
    if (kids_obj == NULL) goto error;
    slot_set(node, l->node_kids, kids_obj);
    PyObject *rec = SLOT(node, l->node_rec);
    PyObject *numbering = rec == NULL ? NULL : PyObject_GetAttr(rec, s_numbering);
    if (numbering == NULL) goto error;
    if (Py_TYPE(numbering) != l->numbering_type) {
        Py_DECREF(numbering);
        PyErr_SetString(PyExc_TypeError, "a recording's numbering is not a Numbering");
        goto error;
    }
    long last = PyLong_AsLong(SLOT(numbering, l->numbering_last));
    if (last == -1 && PyErr_Occurred()) { Py_DECREF(numbering); goto error; }
    key = PyLong_FromLong(last + 1);
    if (key == NULL) { Py_DECREF(numbering); goto error; }
    /* The child, every slot filled as Node.__init__ fills them. */
    child = l->node_type->tp_alloc(l->node_type, 0);
    if (child == NULL) { Py_DECREF(numbering); goto error; }
    SLOT(child, l->node_name) = Py_NewRef(Py_None);
    SLOT(child, l->node_rec) = Py_NewRef(rec);
    SLOT(child, l->node_parent) = Py_NewRef(node);
    SLOT(child, l->node_ordinal) = Py_NewRef(kids_obj);
    SLOT(child, l->node_kids) = Py_NewRef(zero);
    SLOT(child, l->node_id) = Py_NewRef(key);
    SLOT(child, l->node_rng) = Py_NewRef(Py_None);
    SLOT(child, l->node_muted) = Py_NewRef(Py_False);
    SLOT(child, l->node_pending) = Py_NewRef(Py_False);
    slot_set(numbering, l->numbering_last, key);
    PyObject *new = SLOT(numbering, l->numbering_new);
    int failed = new == NULL || !PyList_CheckExact(new) || PyList_Append(new, key) < 0
        || PyList_Append(new, pid) < 0 || PyList_Append(new, kids_obj) < 0;
    Py_DECREF(numbering);
    if (failed) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Numbering.new is not a list");
        goto error;
    }
    if (set_in_context(self, ctx, child) < 0) goto error;
done:
    Py_DECREF(ctx);
    Py_XDECREF(node); Py_XDECREF(child); Py_XDECREF(key);
    Py_XDECREF(kids_obj);
    Py_RETURN_NONE;
error:
    Py_DECREF(ctx);
    Py_XDECREF(node); Py_XDECREF(child); Py_XDECREF(key);
    Py_XDECREF(kids_obj);
    return NULL;
}

static PyMethodDef spawn_methods[] = {
    {"task_spawned", (PyCFunction)spawn_task_spawned, METH_O,
     "task_spawned(task): name and number a task just spawned, if it is followed."},
    {NULL}
};

static PyType_Slot spawn_slots[] = {
    {Py_tp_doc, "The recording's spawn hook (see mcpactor.tracing.tasks.Naming)."},
    {Py_tp_init, spawn_init},
    {Py_tp_traverse, spawn_traverse},
    {Py_tp_clear, spawn_clear},
    {Py_tp_dealloc, spawn_dealloc},
    {Py_tp_methods, spawn_methods},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL}
};

static PyType_Spec spawn_spec = {
    "mcpactor.tracing._hooks.SpawnHook", sizeof(SpawnHook), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, spawn_slots
};

/* ------------------------------------------------------------------------------------ */

static int
intern_names(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_context, "context"); INTERN(s_id, "id"); INTERN(s_pending, "pending");
    INTERN(s_muted, "muted"); INTERN(s_kids, "kids"); INTERN(s_parent, "parent");
    INTERN(s_ordinal, "ordinal"); INTERN(s_rec, "rec"); INTERN(s_numbering, "numbering");
    INTERN(s_last, "last"); INTERN(s_new, "new"); INTERN(s_planned, "planned");
    INTERN(s_task, "task"); INTERN(s_allow_deterministic, "_ALLOW_DETERMINISTIC_SCHEDULING");
    INTERN(s_sched, "sched"); INTERN(s_name, "_name"); INTERN(s_rng, "rng");
#undef INTERN
    if ((zero = PyLong_FromLong(0)) == NULL) return -1;
    return 0;
}

static int
hooks_exec(PyObject *module)
{
    if (zero == NULL && intern_names() < 0) return -1;
    PyObject *pass = PyType_FromModuleAndSpec(module, &pass_spec, NULL);
    if (pass == NULL) return -1;
    if (PyModule_AddObject(module, "PassHook", pass) < 0) { Py_DECREF(pass); return -1; }
    PyObject *spawn = PyType_FromModuleAndSpec(module, &spawn_spec, NULL);
    if (spawn == NULL) return -1;
    if (PyModule_AddObject(module, "SpawnHook", spawn) < 0) { Py_DECREF(spawn); return -1; }
    return 0;
}

static PyModuleDef_Slot hooks_module_slots[] = {
    {Py_mod_exec, hooks_exec},
    {0, NULL}
};

static struct PyModuleDef hooks_module = {
    PyModuleDef_HEAD_INIT, "_hooks",
    "The recording's per-pass and per-spawn hooks in C (see mcpactor.tracing.hooks).",
    0, NULL, hooks_module_slots, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__hooks(void)
{
    return PyModuleDef_Init(&hooks_module);
}
