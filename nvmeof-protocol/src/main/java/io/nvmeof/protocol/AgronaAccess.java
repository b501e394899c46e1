package io.nvmeof.protocol;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;

/**
 * Lets Agrona 2 reach {@code jdk.internal.misc.Unsafe} without a JVM flag.
 *
 * <p>Agrona 2's buffers and queues (the wire formats' {@code UnsafeBuffer}, the initiator's and the target's queues)
 * call {@code jdk.internal.misc.Unsafe}, which {@code java.base} exports to nobody: without
 * {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED} the first buffer fails with an
 * {@code IllegalAccessError} from {@code org.agrona.UnsafeApi}. A library must not ask that of every program that
 * depends on it, so the classes a program starts from (the controller, the dataset, the target, the commands) call
 * {@link #ensure()} before they touch Agrona: it exports the package to Agrona's module (the class path's unnamed
 * module, or Agrona's own on the module path), as the flag would. With the flag given it does nothing.
 *
 * <p>The export is made through the JDK's own lookup, reached with {@code sun.misc.Unsafe} (module
 * {@code jdk.unsupported}, open to every program), as JDK 17 to 23 allow. Where a JDK no longer allows it, the error
 * says which flag to add.
 */
public final class AgronaAccess {
    /** The package Agrona 2's {@code UnsafeApi} calls into. */
    static final String PACKAGE = "jdk.internal.misc";

    /** The flag that does the same; named in the error when the export cannot be made here. */
    public static final String FLAG = "--add-exports java.base/" + PACKAGE + "=ALL-UNNAMED";

    private static volatile boolean done;

    private AgronaAccess() {
    }

    /** Makes {@code jdk.internal.misc} reachable from Agrona, once per JVM; cheap after the first call. */
    public static void ensure() {
        if (done) {
            return;
        }
        synchronized (AgronaAccess.class) {
            if (!done) {
                export();
                done = true;
            }
        }
    }

    private static Module agronaModule() {
        // A class literal loads the class without initialising it: UnsafeApi's static initialiser is what fails.
        return org.agrona.UnsafeApi.class.getModule();
    }

    private static void export() {
        Module agrona = agronaModule();
        if (Object.class.getModule().isExported(PACKAGE, agrona)) {
            return;
        }
        try {
            Field theUnsafe = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            sun.misc.Unsafe unsafe = (sun.misc.Unsafe) theUnsafe.get(null);
            Field implLookup = MethodHandles.Lookup.class.getDeclaredField("IMPL_LOOKUP");
            @SuppressWarnings("deprecation")
            MethodHandles.Lookup trusted = (MethodHandles.Lookup) unsafe.getObject(
                    unsafe.staticFieldBase(implLookup), unsafe.staticFieldOffset(implLookup));
            if (agrona.isNamed()) {
                MethodHandle addExports = trusted.findVirtual(Module.class, "implAddExports",
                        MethodType.methodType(void.class, String.class, Module.class));
                addExports.invoke(Object.class.getModule(), PACKAGE, agrona);
            } else {
                MethodHandle addExports = trusted.findVirtual(Module.class, "implAddExportsToAllUnnamed",
                        MethodType.methodType(void.class, String.class));
                addExports.invoke(Object.class.getModule(), PACKAGE);
            }
        } catch (Throwable e) {
            throw new IllegalStateException("Agrona cannot reach java.base's " + PACKAGE + " on this JDK ("
                    + Runtime.version() + ") and it could not be opened here (" + e + "): start the JVM with "
                    + FLAG + (agrona.isNamed() ? " (with " + agrona.getName() + " for ALL-UNNAMED on the module path)" : ""), e);
        }
        if (!Object.class.getModule().isExported(PACKAGE, agrona)) {
            throw new IllegalStateException("Agrona cannot reach java.base's " + PACKAGE + ": start the JVM with " + FLAG);
        }
    }
}
