package io.nvmeof.tgt.backend;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import io.nvmeof.uring.OpenFile;
import io.nvmeof.uring.UringException;
import io.nvmeof.uring.UringLibrary;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A namespace backed by a regular file (or block device) with positional I/O, so concurrent queues never share a file
 * position. A missing file is created sparse at the given size, owner-only (0600), and only at its own name, never
 * through a symbolic link; an existing one (or one a link names) is grown to the size, never shrunk.
 * Flush is {@code fdatasync}: data written before it is durable when it completes. Deallocate punches holes and Write
 * Zeroes zeroes ranges through {@code fallocate} ({@link FileSpace}), writing zeroes only where the file system cannot.
 *
 * <p>Reads, writes and flushes go through the poll groups' io_uring on a second descriptor ({@link #ringFile}; for a
 * block device opened exclusively, so a mounted device or one another exporter holds is refused): with O_DIRECT by
 * default (as nvmet's without {@code buffered_io}: no page cache, no readahead, many requests at the device at once),
 * through the page cache with {@code bufferedIo} or on a file system that refuses O_DIRECT (tmpfs, said once in the
 * log). Either way a poll group never waits for the file. Without io_uring the log says so once and the same I/O runs
 * on backend threads ({@link #ioMayBlock}). The channel stays for sizing, growing and the paths off the poll groups;
 * while the file is served direct, {@link #read} and {@link #write} (a poll group without a ring, zeroes written where
 * the file system cannot zero a range) use the direct descriptor too ({@link DirectPositionalIo}): page-cache I/O beside
 * direct I/O on one file makes the kernel fail the next fsync with EIO.
 */
public final class FileBackend implements BlockBackend {
    private static final Logger LOG = LoggerFactory.getLogger(FileBackend.class);
    private static volatile boolean noUringLogged;
    private static final ByteBuffer ZEROES = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();

    private final Path path;
    private final FileChannel channel;
    private final FileSpace space;
    /** Grows live ({@link #grow}); read by any thread. */
    private volatile long size;
    private final boolean device;
    /** What opening did to the file, for {@link #discard} to undo: created it, else its length before. */
    private final boolean created;
    private final long lengthBefore;
    /** What any other name of the same storage has too (see {@link #identity}). */
    private final Object identity;
    /**
     * The descriptor the poll groups' io_uring uses (O_DIRECT or buffered), and backend threads where there is no ring;
     * null only where the native helper is missing, or io_uring is unavailable for a bufferedIo namespace.
     */
    private final OpenFile direct;
    private final RingFile ringFile;
    /**
     * Backend threads using {@link #direct}'s descriptor number for pread/pwrite: it is closed by whoever leaves it
     * unused (a close under a call would let a file opened meanwhile take the number, and the write land there).
     */
    private final UseCount directUsers = new UseCount();
    /** The device's nr_requests (a file's: its file system's device), 0 where unknown. */
    private final int deviceRequestLimit;
    /** A block device's logical block size: the smallest it reads and writes; 0 for files or where unknown. */
    private final int logicalBlockSize;
    /** A block device's physical block size and discard granularity in bytes; 0 for files or where unknown. */
    private final int physicalBlockSize;
    private final int discardGranularity;

    /** A file served buffered (through the page cache). */
    public FileBackend(Path path, long sizeBytes) throws IOException {
        this(path, sizeBytes, false, false);
    }

    /**
     * A file, served with direct I/O unless {@code bufferedIo} (or O_DIRECT is unavailable). A block device named here
     * is opened as one ({@link #openBlockDevice}, with every check a block namespace has: exclusive, writable, its
     * logical block size), as nvmet serves a device_path by what it is; any other special file is refused. A device
     * opened as a plain file skipped those checks: a mounted file system's device was accepted and written over.
     */
    public static FileBackend openFile(Path path, long sizeBytes, boolean bufferedIo) throws IOException {
        java.nio.file.attribute.BasicFileAttributes a = null;
        try {
            a = Files.readAttributes(path, java.nio.file.attribute.BasicFileAttributes.class);
        } catch (java.nio.file.NoSuchFileException e) {
            // created below
        }
        if (a != null && a.isOther()) {
            if (isBlockDevice(path)) {
                LOG.info("{} is a block device: served as a block namespace (backend block)", path);
                return openBlockDevice(path, sizeBytes, bufferedIo);
            }
            throw new IOException(path + " is neither a regular file nor a block device (a character device, a FIFO"
                    + " or a socket): a namespace needs one of those");
        }
        return new FileBackend(path, sizeBytes, false, !bufferedIo);
    }

    /**
     * A block device (as nvmet's bdev backend exports one): it must exist and be a block device; its size is the
     * device's, or {@code sizeBytes} when that is smaller (a device is never grown). I/O goes through the page cache
     * as with files; Flush is fdatasync of the device.
     */
    public static FileBackend openBlockDevice(Path path, long sizeBytes) throws IOException {
        return openBlockDevice(path, sizeBytes, true);
    }

    /** A block device, served with direct I/O (opened exclusively) unless {@code bufferedIo}. */
    public static FileBackend openBlockDevice(Path path, long sizeBytes, boolean bufferedIo) throws IOException {
        java.nio.file.attribute.BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, java.nio.file.attribute.BasicFileAttributes.class);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new IOException("block device " + path + " does not exist");
        }
        if (!a.isOther() || !isBlockDevice(path)) {
            throw new IOException(path + " is not a block device (use backend file for a regular file)");
        }
        return new FileBackend(path, sizeBytes, true, !bufferedIo);
    }

    /** Block and character devices both read as "other"; sysfs lists block devices only. */
    private static boolean isBlockDevice(Path path) throws IOException {
        Object rdev = Files.getAttribute(path, "unix:rdev");
        return rdev instanceof Long r && Files.isDirectory(Path.of("/sys/dev/block/" + major(r) + ":" + minor(r)));
    }

    /** Whether the kernel marks {@code path}'s block device read-only (/sys/dev/block/M:m/ro). */
    private static boolean readOnlyDevice(Path path) {
        try {
            long rdev = (Long) Files.getAttribute(path, "unix:rdev");
            Path ro = Path.of("/sys/dev/block/" + major(rdev) + ":" + minor(rdev) + "/ro");
            return Files.readString(ro).strip().equals("1");
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static long major(long dev) {
        return ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
    }

    private static long minor(long dev) {
        return (dev & 0xff) | ((dev >>> 12) & ~0xffL);
    }

    private FileBackend(Path path, long sizeBytes, boolean device, boolean wantDirect) throws IOException {
        this.path = path;
        this.device = device;
        FileChannel ch;
        boolean made = false;
        if (device) {
            // The kernel lets root open a read-only device for writing, and fails the writes: refuse it now instead.
            if (readOnlyDevice(path)) {
                throw new IOException("block device " + path + " is read-only; this target exports devices it can"
                        + " write (make it writable with: blockdev --setrw " + path + ")");
            }
            ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } else {
            try {
                // O_CREAT|O_EXCL|O_NOFOLLOW: created at its own name or not at all, never through a link.
                ch = FileChannel.open(path, CREATE_NEW, OWNER_ONLY);
                made = true;
            } catch (java.nio.file.FileAlreadyExistsException e) {
                // Something is there: an existing file, or a link to one, is opened; nothing is created.
                ch = openExisting(path);
            }
        }
        this.channel = ch;
        this.created = made;
        long existing = channel.size();
        this.lengthBefore = existing;
        try {
            if (device && sizeBytes > existing) {
                throw new IOException("block device " + path + " has " + existing + " bytes; a namespace of " + sizeBytes
                        + " does not fit");
            }
            if (sizeBytes <= 0) {
                if (existing == 0) {
                    throw new IOException("file " + path + " is empty; give the namespace a size to create it");
                }
                sizeBytes = existing;
            } else if (existing < sizeBytes) {
                // Grow sparse: write the last byte.
                channel.write(ByteBuffer.wrap(new byte[1]), sizeBytes - 1);
            }
            this.size = sizeBytes;
            this.identity = identityOf(path, device);
            this.space = new FileSpace(path);
        } catch (IOException | RuntimeException e) {
            // Refused: the file as it was (a refused namespace must not leave a new or grown file behind).
            try {
                undoOpening();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        OpenFile d = null;
        try {
            d = openForRing(path, device, wantDirect);
        } catch (IOException | RuntimeException e) {
            try {
                space.close();
                undoOpening();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        this.direct = d;
        String majorMinor = device ? deviceNumberOf(path) : null;
        this.logicalBlockSize = !device ? 0 : d != null ? d.logicalBlockSize()
                : queueAttribute(majorMinor, "logical_block_size");
        this.physicalBlockSize = !device ? 0 : d != null ? Math.max(0, d.physicalBlockSize())
                : queueAttribute(majorMinor, "physical_block_size");
        this.discardGranularity = device ? discardGranularityOf(majorMinor) : 0;
        this.deviceRequestLimit = nrRequestsOf(device ? majorMinor : fileSystemDevice(path));
        this.ringFile = d == null ? null : d.mode().direct()
                ? new RingFile(d.fd(), d.directMemoryAlignment(), d.directOffsetAlignment(), true)
                : RingFile.buffered(d.fd());
    }

    /**
     * The descriptor for the poll groups' io_uring: O_DIRECT when {@code wantDirect} and the file system takes it,
     * else through the page cache; without io_uring, only a direct one (else null). A block device is opened exclusively: one that
     * is mounted or held by another exporter is refused.
     */
    private static OpenFile openForRing(Path path, boolean device, boolean wantDirect) throws IOException {
        if (!UringLibrary.isAvailable()) {
            boolean direct = wantDirect && UringLibrary.helperReady();
            if (!noUringLogged) {
                noUringLogged = true;
                LOG.warn("io_uring is unavailable ({}): file and block namespaces are served by backend threads, {}"
                        + " (slower; the poll groups are not held up)", UringLibrary.unavailableReason(),
                        UringLibrary.helperReady() ? "with direct I/O (pread/pwrite) unless bufferedIo"
                                : "buffered (the native helper for direct I/O is missing too)");
            }
            if (!direct) {
                return null;
            }
            // The descriptor is opened direct all the same (and a block device exclusively): the backend threads read
            // and write through it (DirectPositionalIo), as the ring would.
        }
        try {
            return OpenFile.open(path, new OpenFile.Mode(true, wantDirect, device, false));
        } catch (UringException e) {
            if (device && e.errno() == 16) {
                throw new IOException("block device " + path + " is in use (mounted, or held by another exporter);"
                        + " unmount it or stop the other user first", e);
            }
            if (wantDirect && !device && e.errno() == 22) {
                LOG.warn("{}: its file system refuses O_DIRECT; served buffered (through the page cache)", path);
                return openForRing(path, false, false);
            }
            throw new IOException("cannot open " + path + (wantDirect ? " for direct I/O: " : ": ") + e.getMessage(), e);
        }
    }

    @Override
    public RingFile ringFile() {
        return ringFile;
    }

    @Override
    public int physicalBlockSize() {
        return physicalBlockSize;
    }

    @Override
    public int discardGranularity() {
        return discardGranularity;
    }

    @Override
    public int deviceRequestLimit() {
        return deviceRequestLimit;
    }

    @Override
    public int logicalBlockSize() {
        return logicalBlockSize;
    }

    /** "major:minor" of the block device {@code path}, or null where it cannot be read. */
    private static String deviceNumberOf(Path path) {
        try {
            long rdev = (Long) Files.getAttribute(path, "unix:rdev");
            return major(rdev) + ":" + minor(rdev);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** sysfs's discard granularity of the device {@code major:minor} (a partition: its disk's); 0 where unknown. */
    private static int discardGranularityOf(String majorMinor) {
        return queueAttribute(majorMinor, "discard_granularity");
    }

    /** sysfs's nr_requests of the device {@code major:minor} (a partition: its disk's); 0 where unknown. */
    private static int nrRequestsOf(String majorMinor) {
        return majorMinor == null ? 0 : queueAttribute(majorMinor, "nr_requests");
    }

    /** A number from the queue directory in sysfs of the device {@code major:minor}, or its disk's; 0 where unknown. */
    private static int queueAttribute(String majorMinor, String name) {
        if (majorMinor == null) {
            return 0;
        }
        Path dev = Path.of("/sys/dev/block", majorMinor);
        for (Path queue : new Path[] {dev.resolve("queue"), dev.resolve("../queue")}) {
            try {
                return Integer.parseInt(Files.readString(queue.resolve(name)).trim());
            } catch (IOException | NumberFormatException e) {
                // not this one (a partition has no queue of its own), or not readable: try the next, else unknown
            }
        }
        return 0;
    }

    /** "major:minor" of the device the file system holding {@code path} is on, or null (tmpfs, overlay: none). */
    private static String fileSystemDevice(Path path) {
        try {
            long dev = (Long) Files.getAttribute(path, "unix:dev");
            return major(dev) + ":" + minor(dev);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Opening a new file: only at its own name (see the constructor). */
    private static final java.util.Set<java.nio.file.OpenOption> CREATE_NEW = java.util.Set.of(
            StandardOpenOption.CREATE_NEW, java.nio.file.LinkOption.NOFOLLOW_LINKS, StandardOpenOption.READ,
            StandardOpenOption.WRITE);
    /**
     * A new file is its owner's only (0600, less what the umask takes): it holds the hosts' data. An existing one
     * keeps its mode.
     */
    private static final java.nio.file.attribute.FileAttribute<?>[] OWNER_ONLY =
            java.nio.file.FileSystems.getDefault().supportedFileAttributeViews().contains("posix")
                    ? new java.nio.file.attribute.FileAttribute<?>[] {java.nio.file.attribute.PosixFilePermissions
                            .asFileAttribute(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"))}
                    : new java.nio.file.attribute.FileAttribute<?>[0];

    private static FileChannel openExisting(Path path) throws IOException {
        try {
            return FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (java.nio.file.NoSuchFileException e) {
            if (Files.isSymbolicLink(path)) {
                throw new IOException(path + " is a symbolic link to " + Files.readSymbolicLink(path) + ", which does"
                        + " not exist: a namespace's file is created only at its own name; create the file first, or"
                        + " give the path the file should have", e);
            }
            throw e;
        }
    }

    private static Object identityOf(Path path, boolean device) throws IOException {
        if (device) {
            return "block device " + Files.getAttribute(path, "unix:rdev"); // /dev/sdb and its by-id links alike
        }
        Object key = Files.readAttributes(path, java.nio.file.attribute.BasicFileAttributes.class).fileKey();
        return key != null ? key : path.toRealPath(); // (device, inode): hard links and symbolic links alike
    }

    /**
     * What every backend on the same storage has, however it was named: the device number of a block device, the
     * device and inode of a file (so hard and symbolic links to it too). Two namespaces on one must not be.
     */
    public Object identity() {
        return identity;
    }

    public boolean isBlockDevice() {
        return device;
    }

    public Path path() {
        return path;
    }

    @Override
    public long sizeBytes() {
        return size;
    }

    /**
     * A file is extended sparse; a block device is only re-measured (it grows by itself: a resized LUN or volume),
     * as SPDK's {@code bdev_aio_rescan} does.
     */
    @Override
    public synchronized void grow(long newSizeBytes) throws IOException {
        if (newSizeBytes < size) {
            throw new IllegalArgumentException(describe() + " has " + size + " bytes; namespaces grow, never shrink");
        }
        long existing = channel.size();
        if (device && newSizeBytes > existing) {
            throw new IllegalArgumentException("block device " + path + " has " + existing + " bytes; grow the device"
                    + " first, then the namespace");
        }
        if (!device && existing < newSizeBytes) {
            channel.write(ByteBuffer.wrap(new byte[1]), newSizeBytes - 1);
        }
        size = newSizeBytes;
    }

    /** The file's length or the device's capacity now; a smaller one than before is adopted (see BlockBackend). */
    @Override
    public synchronized long measureSizeBytes() throws IOException {
        long now = channel.size();
        if (now < size) {
            size = now;
        }
        return now;
    }

    /**
     * Whether a read or write of {@code length} bytes at {@code offset} that does not go through a poll group's ring
     * must still go around the page cache: the file is served direct (see {@link DirectPositionalIo}).
     */
    private boolean aroundPageCache(long offset, int length) {
        return ringFile != null && ringFile.direct() && ringFile.fits(0, offset, length) && DirectPositionalIo.available();
    }

    private void enterDirect() throws IOException {
        if (!directUsers.enter()) {
            throw new IOException(describe() + " is closed");
        }
    }

    private void exitDirect() {
        if (directUsers.exit()) {
            closeDirect(); // closed meanwhile: the last user out closes the descriptor
        }
    }

    private void closeDirect() {
        try {
            direct.close();
        } catch (UringException e) {
            LOG.warn("closing the direct descriptor of {}: {}", describe(), e.getMessage());
        }
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        if (aroundPageCache(offset, dst.remaining())) {
            enterDirect();
            try {
                DirectPositionalIo.read(direct.fd(), offset, dst);
            } finally {
                exitDirect();
            }
            return;
        }
        while (dst.hasRemaining()) {
            int n = channel.read(dst, offset);
            if (n < 0) {
                throw new PastEndOfStorageException(describe() + " ends at " + offset + ", before the namespace's end");
            }
            offset += n;
        }
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        if (aroundPageCache(offset, src.remaining())) {
            enterDirect();
            try {
                DirectPositionalIo.write(direct.fd(), offset, src);
            } finally {
                exitDirect();
            }
            return;
        }
        while (src.hasRemaining()) {
            offset += channel.write(src, offset);
        }
    }

    @Override
    public void flush() throws IOException {
        channel.force(false);
    }

    @Override
    public void writeZeroes(long offset, long length) throws IOException {
        if (!deviceSpace(FileSpace.ZERO_RANGE, offset, length) && !space.zeroRange(offset, length)) {
            writeZeroBytes(offset, length);
        }
    }

    /** Whether the device's exclusive descriptor has refused a fallocate mode (EOPNOTSUPP): not asked again. */
    private volatile boolean deviceZeroRangeRefused;
    private volatile boolean devicePunchRefused;

    /**
     * A block device's Write Zeroes or Deallocate: {@code fallocate} on its exclusive descriptor (the ring's). On any
     * other descriptor of a device held exclusively the kernel can only invalidate the page cache for the range, and
     * fails with EBUSY while buffered writes to it are under way ({@code bufferedIo}: 494 of 7,053 failed with a write
     * fault under load). False: not done here (a file, or the device cannot), the caller goes on as before.
     */
    private boolean deviceSpace(int mode, long offset, long length) throws IOException {
        boolean punch = mode == FileSpace.PUNCH_HOLE;
        if (!device || direct == null || FileSpace.LIBC == null
                || (punch ? devicePunchRefused : deviceZeroRangeRefused)) {
            return false;
        }
        enterDirect();
        try {
            FileSpace.LIBC.fallocate(direct.fd(), mode, offset, length);
            return true;
        } catch (com.sun.jna.LastErrorException e) {
            if (e.getErrorCode() == FileSpace.EOPNOTSUPP || e.getErrorCode() == FileSpace.ENOSYS) {
                if (punch) {
                    devicePunchRefused = true;
                } else {
                    deviceZeroRangeRefused = true;
                }
                return false;
            }
            throw new IOException("fallocate " + (punch ? "PUNCH_HOLE" : "ZERO_RANGE") + " " + offset + "+" + length
                    + " of " + describe() + ": errno " + e.getErrorCode(), e);
        } finally {
            exitDirect();
        }
    }

    private void writeZeroBytes(long offset, long length) throws IOException {
        while (length > 0) {
            ByteBuffer z = ZEROES.duplicate();
            z.limit((int) Math.min(length, z.capacity()));
            int n = z.remaining();
            write(offset, z);
            offset += n;
            length -= n;
        }
    }

    @Override
    public void deallocate(long offset, long length) throws IOException {
        // A hole reads as zeroes, which keeps the promise DLFEAT makes; where there are no holes, write zeroes.
        if (!deviceSpace(FileSpace.PUNCH_HOLE, offset, length) && !space.punchHole(offset, length)) {
            writeZeroes(offset, length);
        }
    }

    /** File space changes, zeroing and fdatasync can take long: never on a poll group thread. */
    @Override
    public boolean mayBlock(long bytes) {
        return true;
    }

    /** Reads and writes through {@link #read} and {@link #write} wait for the device: never on a poll group thread. */
    @Override
    public boolean ioMayBlock() {
        return true;
    }

    @Override
    public String describe() {
        return (device ? "block device " : "file ") + path;
    }

    @Override
    public void close() throws IOException {
        try {
            space.close();
            channel.close();
        } finally {
            if (direct != null && directUsers.close()) {
                direct.close(); // else the last backend thread using it closes it
            }
        }
    }

    /**
     * Closes the backend and undoes what opening it did to the file: one it created is removed, one it grew is cut back
     * to its length before. No host has seen the namespace, so no data is lost; another namespace on the same file
     * addresses no byte past that length.
     */
    @Override
    public void discard() throws IOException {
        try {
            space.close();
            if (direct != null && directUsers.close()) {
                direct.close(); // else the last backend thread using it closes it
            }
        } finally {
            undoOpening();
        }
    }

    private void undoOpening() throws IOException {
        try {
            if (!created && !device && channel.size() > lengthBefore) {
                channel.truncate(lengthBefore);
            }
        } finally {
            channel.close();
            if (created) {
                Files.deleteIfExists(path);
            }
        }
    }
}
