"""Pass the engine state to jitted functions by pointer.

Numba flattens an aggregate argument into scalars: each array of the state namedtuple becomes
7 to 11 machine words (meminfo, parent, size, itemsize, data, shape, strides), so a call of
``f(st, ...)`` that LLVM does not inline copies about 450 words onto the stack. That copy cost
grew with every array added to the state and, once the argument area neared 4 KiB, turned into
a cliff (see the comment at ``spin.engine.state.MAX_STATE_ARRAYS``).

``state_ref(st)`` stores the namedtuple once in the caller's stack frame and returns a
``StateRef``: one pointer. ``ref.name`` loads only the array it names, so engine functions
written against the namedtuple (``st.dev[...]``, ``st.pool[slot]``) compile unchanged for a
``StateRef`` and a call passes one word for the whole state. The referenced frame must outlive
every use: call ``state_ref`` in the outermost jitted function (``run_until``) and pass the
reference down, never return it.
"""
from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.core.typing.templates import AttributeTemplate
from numba.extending import infer_getattr, intrinsic, lower_getattr_generic, models, register_model


class StateRef(types.Type):
    """Numba type of a pointer to a state namedtuple of type ``tuple_type``."""

    def __init__(self, tuple_type: types.BaseNamedTuple):
        self.tuple_type = tuple_type
        super().__init__(name=f"StateRef({tuple_type})")


@register_model(StateRef)
class _StateRefModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        pointee = dmm.lookup(fe_type.tuple_type).get_value_type()
        super().__init__(dmm, fe_type, pointee.as_pointer())


@infer_getattr
class _StateRefAttributes(AttributeTemplate):
    key = StateRef

    def generic_resolve(self, typ, attr):
        fields = typ.tuple_type.fields
        if attr in fields:
            return typ.tuple_type.types[fields.index(attr)]
        return None


@lower_getattr_generic(StateRef)
def _state_ref_getattr(context, builder, typ, value, attr):
    i = typ.tuple_type.fields.index(attr)
    member = builder.load(cgutils.gep_inbounds(builder, value, 0, i))
    return impl_ret_borrowed(context, builder, typ.tuple_type.types[i], member)


@intrinsic
def state_ref(typingctx, st):
    """A ``StateRef`` to ``st``, valid until the calling function returns."""
    if isinstance(st, StateRef):
        return st(st), lambda context, builder, sig, args: args[0]
    if not isinstance(st, types.BaseNamedTuple):
        return None

    def codegen(context, builder, sig, args):
        slot = cgutils.alloca_once(builder, args[0].type)
        builder.store(args[0], slot)
        return slot

    return StateRef(st)(st), codegen
