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
#include <stdint.h>

static PyObject *s_context, *s_counter, *s_table, *s_pending, *s_ids, *s_parents, *s_ordinals,
    *s_kids, *s_muted, *s_last, *s_new, *s_by_name, *s_sweep_at, *s_tasks, *s_planned,
    *s_task, *s_allow_deterministic, *s_sched, *s_sweep, *s_task_spawned;
static PyObject *zero;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))


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
    Py_ssize_t task_context, task_counter;
    PyTypeObject *root_type;
    Py_ssize_t root_table, root_pending;
    PyTypeObject *table_type;
    Py_ssize_t table_ids, table_parents, table_ordinals, table_kids, table_muted, table_last,
        table_new, table_by_name, table_sweep_at;
} Layout;

static int
layout_init(Layout *l, PyObject *task_type, PyObject *root_type, PyObject *table_type)
{
    if (!PyType_Check(task_type) || !PyType_Check(root_type) || !PyType_Check(table_type)) {
        PyErr_SetString(PyExc_TypeError, "task_type, root_type and table_type are classes");
        return -1;
    }
#define OFF(field, cls, attr) if ((l->field = member_offset(cls, attr)) < 0) return -1
    OFF(task_context, task_type, s_context); OFF(task_counter, task_type, s_counter);
    OFF(root_table, root_type, s_table); OFF(root_pending, root_type, s_pending);
    OFF(table_ids, table_type, s_ids); OFF(table_parents, table_type, s_parents);
    OFF(table_ordinals, table_type, s_ordinals);
    OFF(table_kids, table_type, s_kids); OFF(table_muted, table_type, s_muted);
    OFF(table_last, table_type, s_last); OFF(table_new, table_type, s_new);
    OFF(table_by_name, table_type, s_by_name); OFF(table_sweep_at, table_type, s_sweep_at);
#undef OFF
    l->task_type = (PyTypeObject *)task_type;
    l->root_type = (PyTypeObject *)root_type;
    l->table_type = (PyTypeObject *)table_type;
    return 0;
}

/* A borrowed reference to task.<slot> (NULL, no error set, if it is not a Task). */
static PyObject *
task_slot(Layout *l, PyObject *task, Py_ssize_t off)
{
    return Py_TYPE(task) == l->task_type ? SLOT(task, off) : NULL;
}

/* A new reference to task.context. */
static PyObject *
task_context(Layout *l, PyObject *task)
{
    PyObject *ctx = task_slot(l, task, l->task_context);
    return ctx != NULL ? Py_NewRef(ctx) : PyObject_GetAttr(task, s_context);
}

/* A new reference to task._counter. */
static PyObject *
task_counter(Layout *l, PyObject *task)
{
    PyObject *c = task_slot(l, task, l->task_counter);
    return c != NULL ? Py_NewRef(c) : PyObject_GetAttr(task, s_counter);
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
    PyObject *table;       /* rec.tasks */
    PyObject *handoff;     /* rec.handoff */
    PyObject *many;        /* the scheduler's Python hook for any other case */
    PyObject *coin;        /* () -> float: below 0.5, the batch is reversed */
    PyObject *keep;        /* Trio's replaced coin (KeepOrder: .planned) */
    PyObject *trio_run_dict; /* trio._core._run's namespace (_ALLOW_DETERMINISTIC_SCHEDULING) */
    PyObject *inner;       /* the wrapped clock's reading (plus offset), or None */
    PyObject *virtual_now; /* () -> float: the reading when there is no inner clock */
    PyObject *trio_state;  /* Trio's thread-local dict: "task" in it while a task runs */
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
    Py_VISIT(self->table); Py_VISIT(self->handoff); Py_VISIT(self->many);
    Py_VISIT(self->coin); Py_VISIT(self->keep); Py_VISIT(self->trio_run_dict);
    Py_VISIT(self->inner); Py_VISIT(self->virtual_now); Py_VISIT(self->trio_state);
    Py_VISIT(self->popped); Py_VISIT(self->current);
    Py_VISIT((PyObject *)self->layout.task_type); Py_VISIT((PyObject *)self->layout.root_type);
    Py_VISIT((PyObject *)self->layout.table_type);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
pass_clear(PassHook *self)
{
    Py_CLEAR(self->runq); Py_CLEAR(self->rec); Py_CLEAR(self->events);
    Py_CLEAR(self->table); Py_CLEAR(self->handoff); Py_CLEAR(self->many);
    Py_CLEAR(self->coin); Py_CLEAR(self->keep); Py_CLEAR(self->trio_run_dict);
    Py_CLEAR(self->inner); Py_CLEAR(self->virtual_now); Py_CLEAR(self->trio_state);
    Py_CLEAR(self->popped); Py_CLEAR(self->current);
    Py_CLEAR(self->layout.task_type); Py_CLEAR(self->layout.root_type);
    Py_CLEAR(self->layout.table_type);
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
                             "virtual_now", "trio_state", "chunk_items", "task_type",
                             "root_type", "table_type", NULL};
    PyObject *runq, *many, *coin, *keep, *trio_run, *inner, *virtual_now, *trio_state,
        *task_type, *root_type, *table_type;
    double offset;
    Py_ssize_t chunk_items;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOdOOnOOO", kwlist, &runq, &many,
                                     &coin, &keep, &trio_run, &inner, &offset, &virtual_now,
                                     &trio_state, &chunk_items, &task_type, &root_type,
                                     &table_type))
        return -1;
    Layout layout;
    if (layout_init(&layout, task_type, root_type, table_type) < 0) return -1;
    /* The deque's own iteration (the run queue's own class, a subclass made in Python,
       iterates through this hook). Looked up on collections.deque itself: since 3.12
       deque is a heap type, so "the first built-in class in the MRO" would not find it. */
    PyObject *collections = PyImport_ImportModule("collections");
    if (collections == NULL) return -1;
    PyObject *deque = PyObject_GetAttrString(collections, "deque");
    Py_DECREF(collections);
    if (deque == NULL) return -1;
    int is_deque = PyType_Check(deque) ? PyObject_TypeCheck(runq, (PyTypeObject *)deque) : 0;
    getiterfunc found = is_deque ? ((PyTypeObject *)deque)->tp_iter : NULL;
    Py_DECREF(deque);
    if (found == NULL) {
        PyErr_SetString(PyExc_TypeError, "PassHook: the run queue is not a deque");
        return -1;
    }
    if (!PyModule_Check(trio_run)) {
        PyErr_SetString(PyExc_TypeError, "PassHook: trio_run is Trio's run module");
        return -1;
    }
    if (!PyDict_Check(trio_state)) {
        PyErr_SetString(PyExc_TypeError, "PassHook: trio_state is a dict");
        return -1;
    }
    pass_clear(self);
    self->layout = layout;
    Py_INCREF(layout.task_type); Py_INCREF(layout.root_type); Py_INCREF(layout.table_type);
    self->deque_iter = found;
    self->trio_run_dict = Py_NewRef(PyModule_GetDict(trio_run));
    SET_FIELD(runq, runq); SET_FIELD(many, many); SET_FIELD(coin, coin);
    SET_FIELD(keep, keep); SET_FIELD(inner, inner);
    SET_FIELD(virtual_now, virtual_now); SET_FIELD(trio_state, trio_state);
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
        Py_CLEAR(self->events); Py_CLEAR(self->table); Py_CLEAR(self->handoff);
        Py_RETURN_NONE;
    }
    PyObject *events = PyObject_GetAttrString(rec, "_events");
    PyObject *table = PyObject_GetAttr(rec, s_tasks);
    PyObject *handoff = PyObject_GetAttrString(rec, "handoff");
    if (events == NULL || table == NULL || handoff == NULL) goto fail;
    if (!PyList_CheckExact(events) || Py_TYPE(table) != self->layout.table_type) {
        PyErr_SetString(PyExc_TypeError,
                        "PassHook.bind: a recording has a list _events and a TaskTable tasks");
        goto fail;
    }
    SET_FIELD(rec, rec);
    Py_XSETREF(self->events, events);
    Py_XSETREF(self->table, table);
    Py_XSETREF(self->handoff, handoff);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(events); Py_XDECREF(table); Py_XDECREF(handoff);
    return NULL;
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
    PyObject *ids = SLOT(self->table, l->table_ids);
    if (ids == NULL || !PyDict_CheckExact(ids)) {
        PyErr_SetString(PyExc_TypeError, "TaskTable.ids is not a dict");
        Py_DECREF(tasks);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(tasks);
    PyObject *run = PyTuple_New(n);
    if (run == NULL) goto error_tasks;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *counter = task_counter(l, PyList_GET_ITEM(tasks, i));
        if (counter == NULL) goto error_run;
        PyObject *tid = PyDict_GetItemWithError(ids, counter);  /* borrowed */
        Py_DECREF(counter);
        if (tid != NULL) PyTuple_SET_ITEM(run, k++, Py_NewRef(tid));
        else if (PyErr_Occurred()) goto error_run;
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
        PyObject *pending = SLOT(self->table, l->table_new);
        if (pending == NULL || !PyList_CheckExact(pending)) {
            PyErr_SetString(PyExc_TypeError, "TaskTable.new is not a list");
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
/* SpawnHook: names and numbers each spawned task (Trio's task_spawned), in a recording. */

typedef struct {
    PyObject_HEAD
    Layout layout;
    PyObject *track;       /* TRACK */
    PyObject *ctx_get;     /* contextvars.Context.get */
    PyObject *trio_state;  /* Trio's thread-local dict: the spawner is its "task" */
    PyObject *root;        /* (root, task) -> None: the Python naming, for the rare cases */
    PyObject *spawned;     /* (route) Trio's instruments for task_spawned (a dict), or NULL */
    PyObject *general;     /* (route) Trio's own Instruments.call, for everything else */
} SpawnHook;

static int
spawn_traverse(SpawnHook *self, visitproc visit, void *arg)
{
    Py_VISIT(self->track); Py_VISIT(self->ctx_get); Py_VISIT(self->trio_state);
    Py_VISIT(self->root); Py_VISIT(self->spawned); Py_VISIT(self->general);
    Py_VISIT((PyObject *)self->layout.task_type); Py_VISIT((PyObject *)self->layout.root_type);
    Py_VISIT((PyObject *)self->layout.table_type);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
spawn_clear(SpawnHook *self)
{
    Py_CLEAR(self->track); Py_CLEAR(self->ctx_get); Py_CLEAR(self->trio_state);
    Py_CLEAR(self->root); Py_CLEAR(self->spawned); Py_CLEAR(self->general);
    Py_CLEAR(self->layout.task_type); Py_CLEAR(self->layout.root_type);
    Py_CLEAR(self->layout.table_type);
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
    static char *kwlist[] = {"track", "ctx_get", "trio_state", "python", "task_type",
                             "root_type", "table_type", NULL};
    PyObject *track, *ctx_get, *trio_state, *python, *task_type, *root_type, *table_type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOO", kwlist, &track, &ctx_get,
                                     &trio_state, &python, &task_type, &root_type,
                                     &table_type))
        return -1;
    if (!PyDict_Check(trio_state)) {
        PyErr_SetString(PyExc_TypeError, "SpawnHook: trio_state is a dict");
        return -1;
    }
    Layout layout;
    if (layout_init(&layout, task_type, root_type, table_type) < 0) return -1;
    spawn_clear(self);
    self->layout = layout;
    Py_INCREF(layout.task_type); Py_INCREF(layout.root_type); Py_INCREF(layout.table_type);
    SET_FIELD(track, track); SET_FIELD(ctx_get, ctx_get); SET_FIELD(trio_state, trio_state);
    SET_FIELD(root, python);
    return 0;
}

/* task_spawned(task) (see mcpactor.tracing.tasks.Naming and TaskTable.spawned: this is
   the same naming, for a recording's table; anything else goes to `python`). */
static PyObject *
spawn_task_spawned(SpawnHook *self, PyObject *task)
{
    Layout *l = &self->layout;
    PyObject *ctx = task_context(l, task);
    if (ctx == NULL) return NULL;
    PyObject *call[3] = {ctx, self->track, Py_None};
    PyObject *root = PyObject_Vectorcall(self->ctx_get, call, 3, NULL);
    Py_DECREF(ctx);
    PyObject *kids_obj = NULL, *key = NULL, *counter = NULL;
    if (root == NULL) return NULL;
    if (root == Py_None) goto done;
    if (Py_TYPE(root) != l->root_type) {
        PyErr_SetString(PyExc_TypeError, "a task's tree is not a Root");
        goto error;
    }
    PyObject *table = SLOT(root, l->root_table);
    if (table == NULL || table == Py_None) goto done;  /* untracked */
    if (Py_TYPE(table) != l->table_type || SLOT(root, l->root_pending) == Py_True
            || SLOT(table, l->table_by_name) != Py_None) {
        /* A root to claim, a replay's table, or something unusual: the Python naming. */
        PyObject *r = PyObject_CallOneArg(self->root, task);
        if (r == NULL) goto error;
        Py_DECREF(r);
        goto done;
    }
    PyObject *spawner = PyDict_GetItemWithError(self->trio_state, s_task);  /* borrowed */
    if (spawner == NULL) {
        if (PyErr_Occurred()) goto error;
        goto done;  /* spawned outside a task */
    }
    PyObject *scounter = task_slot(l, spawner, l->task_counter);
    if (scounter == NULL) {
        PyErr_SetString(PyExc_TypeError, "the spawner is not a Trio task");
        goto error;
    }
    PyObject *ids = SLOT(table, l->table_ids), *parents = SLOT(table, l->table_parents),
        *ordinals = SLOT(table, l->table_ordinals), *kids = SLOT(table, l->table_kids),
        *muted = SLOT(table, l->table_muted), *new = SLOT(table, l->table_new);
    if (!ids || !parents || !ordinals || !kids || !muted || !new || !PyDict_CheckExact(ids)
            || !PyDict_CheckExact(parents) || !PyDict_CheckExact(ordinals)
            || !PyDict_CheckExact(kids) || !PySet_Check(muted) || !PyList_CheckExact(new)) {
        PyErr_SetString(PyExc_TypeError, "a TaskTable's slots are not what they should be");
        goto error;
    }
    PyObject *stid = PyDict_GetItemWithError(ids, scounter);  /* borrowed */
    if (stid == NULL) {
        if (PyErr_Occurred()) goto error;
        goto done;  /* an unfollowed spawner */
    }
    int inside = PySet_Contains(muted, stid);
    if (inside < 0) goto error;
    if (inside) goto done;  /* a transport's task */
    PyObject *before = PyDict_GetItemWithError(kids, stid);  /* borrowed */
    if (before == NULL && PyErr_Occurred()) goto error;
    long k = before == NULL ? 1 : PyLong_AsLong(before) + 1;
    if (k == 0 && PyErr_Occurred()) goto error;
    kids_obj = PyLong_FromLong(k);
    if (kids_obj == NULL || PyDict_SetItem(kids, stid, kids_obj) < 0) goto error;
    long last = PyLong_AsLong(SLOT(table, l->table_last));
    if (last == -1 && PyErr_Occurred()) goto error;
    key = PyLong_FromLong(last + 1);
    if (key == NULL) goto error;
    PyObject *old_last = SLOT(table, l->table_last);
    SLOT(table, l->table_last) = Py_NewRef(key);
    Py_XDECREF(old_last);
    if (PyList_Append(new, key) < 0 || PyList_Append(new, stid) < 0
            || PyList_Append(new, kids_obj) < 0)
        goto error;
    if (PyDict_SetItem(parents, key, stid) < 0 || PyDict_SetItem(ordinals, key, kids_obj) < 0)
        goto error;
    counter = task_counter(l, task);
    if (counter == NULL || PyDict_SetItem(ids, counter, key) < 0) goto error;
    PyObject *sweep_at = SLOT(table, l->table_sweep_at);
    if (sweep_at != NULL && PyLong_Check(sweep_at)
            && PyDict_GET_SIZE(ids) > PyLong_AsSsize_t(sweep_at)) {
        PyObject *r = PyObject_CallMethodNoArgs(table, s_sweep);
        if (r == NULL) goto error;
        Py_DECREF(r);
    }
done:
    Py_DECREF(root);
    Py_XDECREF(kids_obj); Py_XDECREF(key); Py_XDECREF(counter);
    Py_RETURN_NONE;
error:
    Py_DECREF(root);
    Py_XDECREF(kids_obj); Py_XDECREF(key); Py_XDECREF(counter);
    return NULL;
}

/* route(spawned, general): call() serves Trio's task_spawned calls itself while this
   hook is the only instrument for them (`spawned`: Trio's dict of those), and hands
   every other call to `general` (Trio's own Instruments.call). */
static PyObject *
spawn_route(SpawnHook *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "route(spawned: dict, general)");
        return NULL;
    }
    Py_XSETREF(self->spawned, Py_NewRef(args[0]));
    Py_XSETREF(self->general, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

/* call(hookname, *args): Trio's Instruments.call, without its Python frame for the
   spawns a recording names (see route). */
static PyObject *
spawn_call(SpawnHook *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (self->general == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "SpawnHook.call before route()");
        return NULL;
    }
    if (nargs == 2 && self->spawned != NULL && PyDict_GET_SIZE(self->spawned) == 1
            && (args[0] == s_task_spawned
                || (PyUnicode_Check(args[0]) && PyUnicode_Compare(args[0], s_task_spawned) == 0))) {
        PyObject *r = spawn_task_spawned(self, args[1]);
        if (r == NULL) {
            /* As Trio does with an instrument that raises: report it, go on. */
            PyErr_WriteUnraisable((PyObject *)self);
            Py_RETURN_NONE;
        }
        return r;
    }
    return PyObject_Vectorcall(self->general, args, (size_t)nargs, NULL);
}

static PyMethodDef spawn_methods[] = {
    {"task_spawned", (PyCFunction)spawn_task_spawned, METH_O,
     "task_spawned(task): name and number a task just spawned, if it is followed."},
    {"route", (PyCFunction)(void (*)(void))spawn_route, METH_FASTCALL,
     "route(spawned, general): let call() serve task_spawned (see _hooks.c)."},
    {"call", (PyCFunction)(void (*)(void))spawn_call, METH_FASTCALL,
     "call(hookname, *args): Trio's Instruments.call, task_spawned served here."},
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

/* ------------------------------------------------------------------------------------ */
/* pack / unpack: a chunk of records for the trace sink, in fewer instructions than      */
/* marshal (the recorded process pays for this encoding; the sink for the decoding).      */
/*                                                                                        */
/* Items, each a tag byte then its data: None, False, True; an int of 64 bits; a float;   */
/* a str the first time it occurs in the chunk (its length and UTF-8), then by its index; */
/* bytes; a tuple (count, then items); anything else as marshal's bytes (ints beyond 64   */
/* bits, dicts, lists...).                                                                */

enum { P_NONE, P_FALSE, P_TRUE, P_INT, P_FLOAT, P_STR, P_STRREF, P_BYTES, P_TUPLE, P_MARSHAL };

#define STR_CACHE 256   /* a power of two */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    /* The strings written in full so far, by address (most a chunk repeats are the same
       objects: its session ids, kinds and actors): a string seen again is written as its
       index. A slot another string took is simply written in full again. */
    PyObject *seen[STR_CACHE];
    uint32_t index[STR_CACHE];
    uint32_t strings;
    PyObject *fallback;    /* (item) -> bytes: marshal's, of anything else */
} Packer;

static int
pk_grow(Packer *p, Py_ssize_t n)
{
    Py_ssize_t cap = p->cap ? p->cap : 4096;
    while (cap < p->len + n) cap *= 2;
    char *buf = PyMem_Realloc(p->buf, (size_t)cap);
    if (buf == NULL) { PyErr_NoMemory(); return -1; }
    p->buf = buf;
    p->cap = cap;
    return 0;
}

#define PK_RESERVE(p, n) (((p)->len + (n) <= (p)->cap) ? 0 : pk_grow((p), (n)))

static int
pk_raw(Packer *p, const void *data, Py_ssize_t n)
{
    if (PK_RESERVE(p, n) < 0) return -1;
    memcpy(p->buf + p->len, data, (size_t)n);
    p->len += n;
    return 0;
}

static int
pk_tag_u32(Packer *p, unsigned char tag, Py_ssize_t n)
{
    if (n > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_OverflowError, "an item of a trace chunk is too large");
        return -1;
    }
    uint32_t v = (uint32_t)n;
    if (PK_RESERVE(p, 5) < 0) return -1;
    p->buf[p->len] = (char)tag;
    memcpy(p->buf + p->len + 1, &v, 4);
    p->len += 5;
    return 0;
}

static int pk_item(Packer *p, PyObject *item, int depth);

static int
pk_other(Packer *p, PyObject *item)
{
    PyObject *data = PyObject_CallOneArg(p->fallback, item);
    if (data == NULL) return -1;
    if (!PyBytes_Check(data)) {
        Py_DECREF(data);
        PyErr_SetString(PyExc_TypeError, "the fallback encoder must return bytes");
        return -1;
    }
    int r = pk_tag_u32(p, P_MARSHAL, PyBytes_GET_SIZE(data));
    if (r == 0) r = pk_raw(p, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data));
    Py_DECREF(data);
    return r;
}

static int
pk_item(Packer *p, PyObject *item, int depth)
{
    PyTypeObject *tp = Py_TYPE(item);
    if (PK_RESERVE(p, 9) < 0) return -1;
    char *out = p->buf + p->len;
    if (item == Py_None) {
        out[0] = P_NONE;
        p->len += 1;
        return 0;
    }
    if (tp == &PyLong_Type) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (overflow) return pk_other(p, item);
        int64_t w = (int64_t)v;
        out[0] = P_INT;
        memcpy(out + 1, &w, 8);
        p->len += 9;
        return 0;
    }
    if (tp == &PyUnicode_Type) {
        size_t slot = ((size_t)item >> 4) & (STR_CACHE - 1);
        if (p->seen[slot] == item) return pk_tag_u32(p, P_STRREF, p->index[slot]);
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(item, &n);
        if (utf8 == NULL) {
            /* Lone surrogates: not UTF-8; marshal carries them. */
            PyErr_Clear();
            return pk_other(p, item);
        }
        if (pk_tag_u32(p, P_STR, n) < 0 || pk_raw(p, utf8, n) < 0) return -1;
        /* Borrowed: the chunk holds the string until the packing is done. */
        p->seen[slot] = item;
        p->index[slot] = p->strings++;
        return 0;
    }
    if (tp == &PyBytes_Type) {
        if (pk_tag_u32(p, P_BYTES, PyBytes_GET_SIZE(item)) < 0) return -1;
        return pk_raw(p, PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item));
    }
    if (tp == &PyFloat_Type) {
        double d = PyFloat_AS_DOUBLE(item);
        out[0] = P_FLOAT;
        memcpy(out + 1, &d, 8);
        p->len += 9;
        return 0;
    }
    if (tp == &PyBool_Type) {
        out[0] = item == Py_True ? P_TRUE : P_FALSE;
        p->len += 1;
        return 0;
    }
    if (tp == &PyTuple_Type && depth < 32) {
        Py_ssize_t n = PyTuple_GET_SIZE(item);
        if (pk_tag_u32(p, P_TUPLE, n) < 0) return -1;
        for (Py_ssize_t i = 0; i < n; i++)
            if (pk_item(p, PyTuple_GET_ITEM(item, i), depth + 1) < 0) return -1;
        return 0;
    }
    return pk_other(p, item);
}

/* pack(first_seq, items, fallback) -> bytes */
static PyObject *
hooks_pack(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "pack(first_seq, items: list, fallback)");
        return NULL;
    }
    long long first = PyLong_AsLongLong(args[0]);
    if (first == -1 && PyErr_Occurred()) return NULL;
    Packer *p = PyMem_Calloc(1, sizeof(Packer));
    if (p == NULL) return PyErr_NoMemory();
    p->fallback = args[2];
    /* The list is not changed meanwhile: this runs under the GIL with no Python code but
       the fallback's, which gets the item only. */
    PyObject *items = Py_NewRef(args[1]);
    Py_ssize_t n = PyList_GET_SIZE(items);
    int64_t head[2] = {(int64_t)first, (int64_t)n};
    int failed = pk_grow(p, 16 + n * 12) < 0 || pk_raw(p, head, 16) < 0;
    for (Py_ssize_t i = 0; !failed && i < n; i++)
        failed = pk_item(p, PyList_GET_ITEM(items, i), 0) < 0;
    PyObject *out = failed ? NULL : PyBytes_FromStringAndSize(p->buf, p->len);
    Py_DECREF(items);
    PyMem_Free(p->buf);
    PyMem_Free(p);
    return out;
}

typedef struct {
    const char *buf;
    Py_ssize_t len, at;
    PyObject *strings;     /* list: index -> str */
    PyObject *loads;       /* marshal.loads */
} Unpacker;

static int
up_need(Unpacker *u, Py_ssize_t n)
{
    if (u->at + n <= u->len) return 0;
    PyErr_SetString(PyExc_ValueError, "a packed trace chunk is cut short");
    return -1;
}

static Py_ssize_t
up_u32(Unpacker *u)
{
    if (up_need(u, 4) < 0) return -1;
    uint32_t v;
    memcpy(&v, u->buf + u->at, 4);
    u->at += 4;
    return (Py_ssize_t)v;
}

static PyObject *
up_item(Unpacker *u, int depth)
{
    if (up_need(u, 1) < 0) return NULL;
    unsigned char tag = (unsigned char)u->buf[u->at++];
    switch (tag) {
    case P_NONE: return Py_NewRef(Py_None);
    case P_FALSE: return Py_NewRef(Py_False);
    case P_TRUE: return Py_NewRef(Py_True);
    case P_INT: {
        if (up_need(u, 8) < 0) return NULL;
        int64_t v;
        memcpy(&v, u->buf + u->at, 8);
        u->at += 8;
        return PyLong_FromLongLong((long long)v);
    }
    case P_FLOAT: {
        if (up_need(u, 8) < 0) return NULL;
        double d;
        memcpy(&d, u->buf + u->at, 8);
        u->at += 8;
        return PyFloat_FromDouble(d);
    }
    case P_STR: {
        Py_ssize_t n = up_u32(u);
        if (n < 0 || up_need(u, n) < 0) return NULL;
        PyObject *s = PyUnicode_DecodeUTF8(u->buf + u->at, n, NULL);
        if (s == NULL) return NULL;
        u->at += n;
        if (PyList_Append(u->strings, s) < 0) { Py_DECREF(s); return NULL; }
        return s;
    }
    case P_STRREF: {
        Py_ssize_t i = up_u32(u);
        if (i < 0) return NULL;
        if (i >= PyList_GET_SIZE(u->strings)) {
            PyErr_SetString(PyExc_ValueError, "a packed trace chunk refers to no string");
            return NULL;
        }
        return Py_NewRef(PyList_GET_ITEM(u->strings, i));
    }
    case P_BYTES: {
        Py_ssize_t n = up_u32(u);
        if (n < 0 || up_need(u, n) < 0) return NULL;
        PyObject *b = PyBytes_FromStringAndSize(u->buf + u->at, n);
        u->at += n;
        return b;
    }
    case P_TUPLE: {
        Py_ssize_t n = up_u32(u);
        if (n < 0) return NULL;
        if (depth >= 32 || n > u->len - u->at) {
            PyErr_SetString(PyExc_ValueError, "a packed trace chunk holds a bad tuple");
            return NULL;
        }
        PyObject *t = PyTuple_New(n);
        if (t == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = up_item(u, depth + 1);
            if (v == NULL) { Py_DECREF(t); return NULL; }
            PyTuple_SET_ITEM(t, i, v);
        }
        return t;
    }
    case P_MARSHAL: {
        Py_ssize_t n = up_u32(u);
        if (n < 0 || up_need(u, n) < 0) return NULL;
        PyObject *data = PyBytes_FromStringAndSize(u->buf + u->at, n);
        if (data == NULL) return NULL;
        u->at += n;
        PyObject *v = PyObject_CallOneArg(u->loads, data);
        Py_DECREF(data);
        return v;
    }
    default:
        PyErr_Format(PyExc_ValueError, "a packed trace chunk holds an unknown tag %d", tag);
        return NULL;
    }
}

/* unpack(data, loads) -> (first_seq, items) */
static PyObject *
hooks_unpack(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "unpack(data, loads)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Unpacker u = {view.buf, view.len, 0, PyList_New(0), args[1]};
    PyObject *items = NULL, *result = NULL;
    if (u.strings == NULL) goto done;
    if (up_need(&u, 16) < 0) goto done;
    int64_t head[2];
    memcpy(head, u.buf, 16);
    u.at = 16;
    if (head[1] < 0 || head[1] > u.len) {
        PyErr_SetString(PyExc_ValueError, "a packed trace chunk has a bad count");
        goto done;
    }
    items = PyList_New((Py_ssize_t)head[1]);
    if (items == NULL) goto done;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)head[1]; i++) {
        PyObject *v = up_item(&u, 0);
        if (v == NULL) goto done;
        PyList_SET_ITEM(items, i, v);
    }
    if (u.at != u.len) {
        PyErr_SetString(PyExc_ValueError, "a packed trace chunk has bytes left over");
        goto done;
    }
    result = Py_BuildValue("(LO)", (long long)head[0], items);
done:
    Py_XDECREF(items);
    Py_XDECREF(u.strings);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef hooks_functions[] = {
    {"pack", (PyCFunction)(void (*)(void))hooks_pack, METH_FASTCALL,
     "pack(first_seq, items, fallback) -> bytes: a chunk of records for the trace sink."},
    {"unpack", (PyCFunction)(void (*)(void))hooks_unpack, METH_FASTCALL,
     "unpack(data, loads) -> (first_seq, items): what pack() made."},
    {NULL}
};

static int
intern_names(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_context, "context"); INTERN(s_counter, "_counter"); INTERN(s_table, "table");
    INTERN(s_pending, "pending"); INTERN(s_ids, "ids");
    INTERN(s_parents, "parents"); INTERN(s_ordinals, "ordinals");
    INTERN(s_kids, "kids"); INTERN(s_muted, "muted");
    INTERN(s_last, "last"); INTERN(s_new, "new"); INTERN(s_by_name, "by_name");
    INTERN(s_sweep_at, "_sweep_at"); INTERN(s_tasks, "tasks"); INTERN(s_planned, "planned");
    INTERN(s_task, "task"); INTERN(s_allow_deterministic, "_ALLOW_DETERMINISTIC_SCHEDULING");
    INTERN(s_sched, "sched"); INTERN(s_sweep, "sweep");
    INTERN(s_task_spawned, "task_spawned");
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
    0, hooks_functions, hooks_module_slots, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__hooks(void)
{
    return PyModuleDef_Init(&hooks_module);
}
