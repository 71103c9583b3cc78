"""threadpoolctl support: ``threadpool_info()`` lists pyrt's pool and ``threadpool_limits(k)``
limits it, like the BLAS and OpenMP pools threadpoolctl already knows."""

import threadpoolctl


class PyrtController(threadpoolctl.LibController):
    user_api = "pyrt"
    internal_api = "pyrt"
    filename_prefixes = ("_pyrt_cffi",)

    def get_num_threads(self):
        return self.dynlib.pyrt_get_num_threads()

    def set_num_threads(self, num_threads):
        return self.dynlib.pyrt_set_num_threads(int(num_threads))

    def get_version(self):
        from pyrt import __version__

        return __version__


threadpoolctl.register(PyrtController)
