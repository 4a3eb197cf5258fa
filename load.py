import json,sys,urllib.request,random,time,threading
E,K,secs=sys.argv[1],sys.argv[2],float(sys.argv[3])
def call(m,p,b=None):
    r=urllib.request.Request(E+p,method=m,data=json.dumps(b).encode() if b is not None else None,headers={"Authorization":"Bearer "+K,"Content-Type":"application/json"})
    try: return json.loads(urllib.request.urlopen(r,timeout=10).read())
    except Exception as e: return None
end=time.time()+secs; added=[0]
def adder():
    i=0
    while time.time()<end:
        q=random.choice(["hooks","pulls"])
        n=random.randint(1,50)
        d=call("POST","/v1/tasks/jobs/queues/%s/tasks"%q,[{"payload":{"i":i+j},"delay":random.choice([0,0,0,3600])} for j in range(n)])
        if d: added[0]+=sum(1 for t in d["tasks"] if t["ok"])
        i+=n
def worker():
    while time.time()<end:
        d=call("POST","/v1/tasks/jobs/queues/pulls/lease",{"count":20,"leaseSeconds":30})
        for t in (d or {}).get("tasks",[]):
            if random.random()<0.7: call("POST","/v1/tasks/jobs/tasks/%s/ack"%t["id"],{"leaseId":t["leaseId"]})
        time.sleep(0.05)
ts=[threading.Thread(target=f) for f in [adder,adder,worker]]
[t.start() for t in ts]; [t.join() for t in ts]
print("added",added[0])
