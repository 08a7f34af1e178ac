# Builds the `attngeo._core` extension with the project's CMake (-DATTNGEO_PYTHON=ON, no
# libtorch, no tests) and installs it beside python/attngeo/__init__.py. Metadata: pyproject.toml.
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    """One CMake tree in build_temp; the extension CMake puts in <tree>/python/attngeo/ is
    copied to where setuptools expects it."""

    def build_extension(self, extension):
        tree = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        configure = ["cmake", "-S", ROOT, "-B", tree, "-DCMAKE_BUILD_TYPE=Release",
                     "-DATTNGEO_PYTHON=ON", "-DATTNGEO_WITH_TORCH=OFF",
                     "-DATTNGEO_BUILD_TESTS=OFF", "-DATTNGEO_BUILD_BENCH=OFF",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", tree, "--target", "attngeo_python", "-j", jobs],
                       check=True)
        built = os.path.join(tree, "python", "attngeo")
        library = next(name for name in os.listdir(built) if name.startswith("_core"))
        destination = self.get_ext_fullpath(extension.name)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copyfile(os.path.join(built, library), destination)


setup(packages=["attngeo"], package_dir={"": "python"},
      ext_modules=[Extension("attngeo._core", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
