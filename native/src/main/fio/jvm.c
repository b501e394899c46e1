/*
 * The JNI bridge: the JVM in fio's process (started through the invocation API by the first job's init, attached
 * for the others), the io.nvmeof.fio.FioJob methods the engine calls, FioJob.wake (the futex wake-up of a sleeping
 * getevents), and the conversions the calls need (settings to String[], a pending exception to text).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>
#include <jni.h>

#include "fio.h"
#include "nvmeof_fio.h"

/* ------------------------------------------------------------------------------------------------ the JVM */

static pthread_mutex_t jvm_lock = PTHREAD_MUTEX_INITIALIZER;
JavaVM *jvm;
jclass job_class;
static jclass string_class;
jmethodID m_open, m_memory, m_submit, m_close, m_describe, m_abandon;

static void JNICALL native_wake(JNIEnv *env, jclass cls, jlong address)
{
	unsigned int *word = (unsigned int *) (uintptr_t) address;

	__atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The exception pending in env, as text (and cleared). */
void exception_text(JNIEnv *env, char *out, size_t len)
{
	jthrowable t = (*env)->ExceptionOccurred(env);

	snprintf(out, len, "a Java exception");
	if (!t)
		return;
	(*env)->ExceptionClear(env);
	jclass throwable = (*env)->FindClass(env, "java/lang/Throwable");
	jmethodID to_string = (*env)->GetMethodID(env, throwable, "getMessage", "()Ljava/lang/String;");
	jstring s = (jstring) (*env)->CallObjectMethod(env, t, to_string);

	if ((*env)->ExceptionCheck(env) || !s) {
		(*env)->ExceptionClear(env);
		to_string = (*env)->GetMethodID(env, throwable, "toString", "()Ljava/lang/String;");
		s = (jstring) (*env)->CallObjectMethod(env, t, to_string);
		(*env)->ExceptionClear(env);
	}
	if (s) {
		const char *c = (*env)->GetStringUTFChars(env, s, NULL);

		snprintf(out, len, "%s", c);
		(*env)->ReleaseStringUTFChars(env, s, c);
	}
}

/* Starts the JVM (once per process) or attaches this thread; returns the thread's env or NULL (logged). */
JNIEnv *java_env(struct thread_data *td, int *attached)
{
	struct nvmeof_options *o = td->eo;
	JNIEnv *env = NULL;

	*attached = 0;
	pthread_mutex_lock(&jvm_lock);
	if (!jvm) {
		char libjvm[PATH_MAX], cp[PATH_MAX], cp_opt[PATH_MAX + 32];
		JavaVMOption opts[32];
		JavaVMInitArgs args;
		int n = 0;
		char *extra = NULL;
		void *h;
		jint (*create)(JavaVM **, void **, void *);

		if (nvmeof_java_paths(o, libjvm, sizeof(libjvm), cp, sizeof(cp))) {
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		h = dlopen(libjvm, RTLD_NOW | RTLD_GLOBAL);
		if (!h) {
			log_err("nvmeof: cannot start a JVM: %s\n", dlerror());
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		create = (jint (*)(JavaVM **, void **, void *)) dlsym(h, "JNI_CreateJavaVM");
		if (!create) {
			log_err("nvmeof: cannot start a JVM: %s has no JNI_CreateJavaVM\n", libjvm);
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		snprintf(cp_opt, sizeof(cp_opt), "-Djava.class.path=%s", cp);
		opts[n++].optionString = cp_opt;
		/* -Xrs: fio keeps SIGINT and SIGTERM (Ctrl-C ends the run as usual). */
		opts[n++].optionString = "-Xrs";
		opts[n++].optionString = "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED";
		opts[n++].optionString = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn";
		opts[n++].optionString = "-Dorg.slf4j.simpleLogger.logFile=System.err";
		{
			const char *more = o->java_opts && o->java_opts[0] ? o->java_opts : getenv("NVMEOF_FIO_JAVA_OPTS");
			char *save = NULL, *t;

			if (more && more[0]) {
				extra = strdup(more);
				for (t = strtok_r(extra, " ", &save); t && n < 31; t = strtok_r(NULL, " ", &save))
					opts[n++].optionString = t;
			}
		}
		memset(&args, 0, sizeof(args));
		args.version = JNI_VERSION_10;
		args.nOptions = n;
		args.options = opts;
		args.ignoreUnrecognized = JNI_FALSE;
		if (create(&jvm, (void **) &env, &args) != JNI_OK) {
			log_err("nvmeof: cannot start a JVM from %s (check java_opts)\n", libjvm);
			jvm = NULL;
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		/* extra's strings were copied by the JVM */
		free(extra);
		jclass local = (*env)->FindClass(env, "io/nvmeof/fio/FioJob");
		if (!local) {
			char msg[512];

			exception_text(env, msg, sizeof(msg));
			log_err("nvmeof: io.nvmeof.fio.FioJob is not in %s (%s); build the project or set java_classpath\n", cp,
				msg);
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		job_class = (jclass) (*env)->NewGlobalRef(env, local);
		JNINativeMethod wake = { "wake", "(J)V", (void *) native_wake };
		if ((*env)->RegisterNatives(env, job_class, &wake, 1) != 0) {
			log_err("nvmeof: cannot register FioJob.wake\n");
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		m_open = (*env)->GetStaticMethodID(env, job_class, "open",
			"([Ljava/lang/String;Ljava/nio/ByteBuffer;I)Lio/nvmeof/fio/FioJob;");
		m_memory = (*env)->GetMethodID(env, job_class, "memory", "(Ljava/nio/ByteBuffer;)V");
		m_submit = (*env)->GetMethodID(env, job_class, "submit", "(I)V");
		m_close = (*env)->GetMethodID(env, job_class, "close", "()V");
		m_describe = (*env)->GetStaticMethodID(env, job_class, "describe", "(I)Ljava/lang/String;");
		m_abandon = (*env)->GetMethodID(env, job_class, "abandonUnreachable", "()Ljava/lang/String;");
		local = (*env)->FindClass(env, "java/lang/String");
		string_class = local ? (jclass) (*env)->NewGlobalRef(env, local) : NULL;
		if (!m_open || !m_memory || !m_submit || !m_close || !m_describe || !m_abandon || !string_class) {
			(*env)->ExceptionClear(env);
			log_err("nvmeof: io.nvmeof.fio.FioJob in %s does not match this engine; rebuild both\n", cp);
			pthread_mutex_unlock(&jvm_lock);
			return NULL;
		}
		/* The creating thread is attached like the others, and detached at its job's cleanup. */
		*attached = 1;
		pthread_mutex_unlock(&jvm_lock);
		return env;
	}
	pthread_mutex_unlock(&jvm_lock);
	if ((*jvm)->GetEnv(jvm, (void **) &env, JNI_VERSION_10) == JNI_OK)
		return env;
	if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void **) &env, NULL) != JNI_OK) {
		log_err("nvmeof: cannot attach thread to the JVM\n");
		return NULL;
	}
	*attached = 1;
	return env;
}

/* The job's settings as a Java String[] (a local reference), or NULL. */
jobjectArray java_settings(JNIEnv *env, struct settings *s)
{
	jobjectArray a = (*env)->NewObjectArray(env, s->n, string_class, NULL);

	for (int i = 0; a && i < s->n; i++) {
		jstring v = (*env)->NewStringUTF(env, s->v[i]);

		if (!v)
			return NULL;
		(*env)->SetObjectArrayElement(env, a, i, v);
		(*env)->DeleteLocalRef(env, v);
	}
	return a;
}
