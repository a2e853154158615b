# Emulate bwd_coop.comp's data flow for one workgroup (block cb=0, one slice) with numpy.
import numpy as np
rng=np.random.default_rng(1)
N=64; KC=8; K=KC*32; gs=32; G=K//gs
codes=rng.integers(0,16,size=(N,K))
s=rng.uniform(0.005,0.015,size=(N,G)).astype(np.float32)
dy=rng.uniform(-1,1,size=N).astype(np.float32)
# pack words: 8 codes per u32, nibble i = code k=8w+i
words=np.zeros((N,K//8),dtype=np.uint64)
for i in range(8): words|=(codes[:,i::8].astype(np.uint64)<<(4*i))
words=words.astype(np.uint32)
ref=np.zeros(K)
for n in range(N):
    for k in range(K): ref[k]+=float(dy[n])*float(s[n,k//gs])*(codes[n,k]-8)
ROWU=33
acc=np.zeros((16,16,8))  # [tile][row i][col]
for n0 in range(0,N,16):
    At=np.zeros(16*ROWU*8,dtype=np.float64)  # fp16 units
    for t in range(256):
        lr=t>>4; lh=t&15; chunk=lh>>1; half=lh&1
        w0=words[n0+lr, chunk*4+half*2]; w1=words[n0+lr, chunk*4+half*2+1]
        o=[]
        for wd,w in enumerate((w0,w1)):
            for q in range(4):
                u=(int(w)>>(4*q)) & 0x000F000F
                lo=(u & 0xF)-8; hi=((u>>16)&0xF)-8
                o.append((lo,hi))
        base=(lr*ROWU+lh*2)*8
        flat=[v for pr in o for v in pr]
        At[base:base+16]=flat
    Bt=np.zeros(8*16*8)
    inv=np.zeros(8)
    for t in range(128):
        cn=t&15; cg=(t>>4)&7
        c=np.float32(dy[n0+cn]*s[n0+cn,cg])
        Bt[(cg*16+cn)*8+0]=c  # hi+lo exact emulation
    for sg in range(8):
        for tile in (2*sg,2*sg+1):
            A=np.zeros((16,16)); B=np.zeros((16,8))
            off=tile*2*8; stride=ROWU*8
            for i in range(16):
                for j in range(16): A[i,j]=At[off+j*stride+i]
            boff=sg*16*8
            for i in range(16):
                for j in range(8): B[i,j]=Bt[boff+i*8+j]
            acc[tile]+=A@B
out=np.zeros(K)
red=acc.reshape(16,128)
for t in range(256):
    tile=t>>4; pos=t&15
    v=acc[tile,pos,0]+acc[tile,pos,1]
    wd=pos>>3; q8=pos&7
    kloc=tile*16+wd*8+(q8>>1)+4*(q8&1)
    out[kloc]=v
print("max rel err", np.max(np.abs(out-ref))/np.max(np.abs(ref)))
# scale / hi-lo path check
import struct
def bits(f): return struct.unpack('<I',struct.pack('<f',f))[0]
def fromb(b): return struct.unpack('<f',struct.pack('<I',b))[0]
errs=[]
for trial in range(2000):
    cs_=rng.uniform(-1,1,16).astype(np.float32)*np.float32(10.0**rng.uniform(-8,3))
    m=max(bits(abs(float(c))) & 0x7FFFFFFF for c in cs_)
    e=min(m,0x7F000000)>>23
    se=max(-126,min(126,141-e))
    sc=1.0 if m>=0x7F800000 else fromb((se+127)<<23)
    inv=1.0 if m>=0x7F800000 else fromb((127-se)<<23)
    tot=0.0; ref_=0.0
    for c in cs_:
        csv=np.float32(c)*np.float32(sc)
        hi=np.float16(csv); lo=np.float16(np.float32(csv)-np.float32(hi))
        tot+= (float(hi)+float(lo))*inv
        ref_+=float(c)
    errs.append(abs(tot-ref_)/max(sum(abs(float(c)) for c in cs_),1e-300))
print("hi/lo worst rel", max(errs))
